package solve

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The package is the kernel's public surface: what its exported functions
// and methods take and return, and the fields of its exported types, are
// its own plain types or the runtime's, never a store row or a
// database/sql type; and no error it makes names a command-line flag (a
// value it cannot take is an OptionError naming the field).
func TestThePublicSurfaceIsPlainAndSpeaksNoFlags(t *testing.T) {
	flag := regexp.MustCompile("(^|[\\s(`\"'])--[a-z]")
	makesError := map[string]bool{"fmt.Errorf": true, "errors.New": true, "option.Errorf": true}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	leaks := func(where string, e ast.Expr) {
		ast.Inspect(e, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok && (pkg.Name == "store" || pkg.Name == "sql") {
					t.Errorf("%s: %s.%s is part of the public surface", where, pkg.Name, sel.Sel.Name)
				}
			}
			return true
		})
	}
	files := 0
	for name, f := range pkgs["solve"].Files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		files++
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && (d.Recv == nil || ast.IsExported(recvName(d.Recv))) {
					leaks(fset.Position(d.Pos()).String()+" "+d.Name.Name, d.Type)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.IsExported() {
						if st, ok := ts.Type.(*ast.StructType); ok {
							for _, fl := range st.Fields.List {
								if len(fl.Names) == 0 || fl.Names[0].IsExported() {
									leaks(fset.Position(fl.Pos()).String()+" "+ts.Name.Name, fl.Type)
								}
							}
						} else {
							leaks(fset.Position(ts.Pos()).String()+" "+ts.Name.Name, ts.Type)
						}
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || !makesError[pkg.Name+"."+sel.Sel.Name] {
				return true
			}
			for _, arg := range call.Args {
				if lit, ok := arg.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, _ := strconv.Unquote(lit.Value); flag.MatchString(s) {
						t.Errorf("%s: an error names a flag: %s", fset.Position(lit.Pos()), s)
					}
				}
			}
			return true
		})
	}
	if files < 6 {
		t.Fatalf("read %d files of package solve", files)
	}
}

// recvName is the name of a method's receiver type.
func recvName(l *ast.FieldList) string {
	e := l.List[0].Type
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
