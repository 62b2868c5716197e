// Package exporttest finds exported names that only tests use: a
// function, type, variable, constant, method or field of a package that
// no code outside a _test.go file refers to. A name a test needs goes
// unexported and reaches the test through export_test.go. Only tests
// import it.
package exporttest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// implicit are method names the standard library calls through its own
// interfaces (fmt, errors, encoding/json, net/http, io, sort, flag values,
// slog): no code of the module names the call, yet it is made.
var implicit = map[string]bool{
	"Error": true, "String": true, "Unwrap": true, "Is": true, "As": true, "Format": true, "GoString": true,
	"MarshalJSON": true, "UnmarshalJSON": true, "MarshalText": true, "UnmarshalText": true,
	"ServeHTTP": true, "RoundTrip": true, "Read": true, "Write": true, "Close": true, "Seek": true,
	"ReadFrom": true, "WriteTo": true, "Len": true, "Less": true, "Swap": true,
	"Set": true, "Type": true, "LogValue": true, "Scan": true, "Value": true, "Timeout": true, "Temporary": true,
}

// pkg is one directory's package: its import path and its files.
type pkg struct {
	path, name string
	files      []*ast.File // not _test.go
	helper     bool        // its files import testing
}

// TestOnly reads the module rooted at root (the directory of go.mod) and
// lists, for the packages under the directories trees (relative to root,
// "hermitcrab" covers hermitcrab/...), each exported name no code but
// tests uses, as "import/path: Name" or "import/path: Type.Member". A
// package main, and a test helper (a package whose name ends in "test",
// or whose own files import testing), is not checked. Fields with a struct tag are left out:
// encoding/json and its kin use them. Finding no package to check is an
// error, so that a wrong root cannot pass for a clean module.
func TestOnly(root string, trees ...string) ([]string, error) {
	modFile, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, fmt.Errorf("read the module's go.mod: %w", err)
	}
	module := ""
	for _, l := range strings.Split(string(modFile), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "module" {
			module = f[1]
		}
	}
	pkgs, err := parseModule(root, module)
	if err != nil {
		return nil, err
	}
	used, members := uses(pkgs)
	var out []string
	checked := 0
	for _, p := range pkgs {
		if !inTrees(p.path, module, trees) || p.name == "main" || p.helper || strings.HasSuffix(p.name, "test") {
			continue
		}
		checked++
		for _, name := range exported(p) {
			if typ, member, ok := strings.Cut(name, "."); ok {
				if !members[member] && !implicit[member] {
					out = append(out, p.path+": "+typ+"."+member)
				}
			} else if !used[p.path+"."+name] {
				out = append(out, p.path+": "+name)
			}
		}
	}
	if checked == 0 {
		return nil, fmt.Errorf("no package to check under %s in %s", strings.Join(trees, ", "), root)
	}
	sort.Strings(out)
	return out, nil
}

func inTrees(p, module string, trees []string) bool {
	for _, t := range trees {
		if dir := module + "/" + t; p == dir || strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// parseModule parses the non-test files of every package of the module.
func parseModule(root, module string) ([]*pkg, error) {
	fset := token.NewFileSet()
	byDir := map[string]*pkg{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", p, err)
		}
		dir := filepath.Dir(p)
		if byDir[dir] == nil {
			rel, _ := filepath.Rel(root, dir)
			byDir[dir] = &pkg{path: path.Join(module, filepath.ToSlash(rel)), name: f.Name.Name}
		}
		byDir[dir].files = append(byDir[dir].files, f)
		for _, imp := range f.Imports {
			if imp.Path.Value == `"testing"` {
				byDir[dir].helper = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the module: %w", err)
	}
	var out []*pkg
	for _, p := range byDir {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

// uses gathers what non-test code refers to: package-level names as
// "import/path.Name" (qualified from another package, bare within their
// own), and the names of selected members, composite literal keys and
// interface methods, by name alone (which type they belong to would need
// type checking; a shared name hides a leak rather than inventing one).
func uses(pkgs []*pkg) (used, members map[string]bool) {
	used, members = map[string]bool{}, map[string]bool{}
	names := map[string]string{} // import path -> package name
	for _, p := range pkgs {
		names[p.path] = p.name
	}
	for _, p := range pkgs {
		for _, f := range p.files {
			imports := map[string]string{} // name in this file -> import path
			for _, imp := range f.Imports {
				ip, _ := strconv.Unquote(imp.Path.Value)
				n, ok := names[ip]
				if !ok {
					continue
				}
				if imp.Name != nil {
					n = imp.Name.Name
				}
				imports[n] = ip
			}
			declared := declNames(f)
			var visit func(n ast.Node) bool
			visit = func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					// the selected name is a member or another
					// package's name, never one of this package's
					members[n.Sel.Name] = true
					if x, ok := n.X.(*ast.Ident); ok {
						if ip, ok := imports[x.Name]; ok {
							used[ip+"."+n.Sel.Name] = true
							return false
						}
					}
					ast.Inspect(n.X, visit)
					return false
				case *ast.KeyValueExpr:
					if k, ok := n.Key.(*ast.Ident); ok {
						members[k.Name] = true
					}
				case *ast.InterfaceType:
					for _, m := range n.Methods.List {
						for _, id := range m.Names {
							members[id.Name] = true
						}
					}
				case *ast.StructType:
					// an embedded type is a use of the type
					for _, fl := range n.Fields.List {
						if len(fl.Names) == 0 {
							if id, ok := deref(fl.Type).(*ast.Ident); ok {
								used[p.path+"."+id.Name] = true
							}
						}
					}
				case *ast.Ident:
					if !declared[n] {
						used[p.path+"."+n.Name] = true
					}
				}
				return true
			}
			ast.Inspect(f, visit)
		}
	}
	return used, members
}

// declNames are the identifiers that declare a package-level name or a
// member, which are not uses of it.
func declNames(f *ast.File) map[*ast.Ident]bool {
	d := map[*ast.Ident]bool{}
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			d[decl.Name] = true
		case *ast.GenDecl:
			for _, s := range decl.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					d[s.Name] = true
				case *ast.ValueSpec:
					for _, id := range s.Names {
						d[id] = true
					}
				}
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if st, ok := n.(*ast.StructType); ok {
			for _, fl := range st.Fields.List {
				for _, id := range fl.Names {
					d[id] = true
				}
			}
		}
		return true
	})
	return d
}

// exported lists a package's exported names: "Name" for package-level
// ones, "Type.Member" for the methods and untagged fields of its exported
// types.
func exported(p *pkg) []string {
	var out []string
	for _, f := range p.files {
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if !decl.Name.IsExported() {
					continue
				}
				if decl.Recv == nil {
					out = append(out, decl.Name.Name)
				} else if id, ok := deref(decl.Recv.List[0].Type).(*ast.Ident); ok && id.IsExported() {
					out = append(out, id.Name+"."+decl.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range decl.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						out = append(out, s.Name.Name)
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fl := range st.Fields.List {
								if fl.Tag != nil && reflect.StructTag(mustUnquote(fl.Tag.Value)) != "" {
									continue
								}
								for _, id := range fl.Names {
									if id.IsExported() {
										out = append(out, s.Name.Name+"."+id.Name)
									}
								}
							}
						}
					case *ast.ValueSpec:
						for _, id := range s.Names {
							if id.IsExported() {
								out = append(out, id.Name)
							}
						}
					}
				}
			}
		}
	}
	return out
}

// deref is a receiver's or embedded field's type name, past a pointer
// and type parameters.
func deref(e ast.Expr) ast.Expr {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		default:
			return e
		}
	}
}

func mustUnquote(s string) string {
	u, err := strconv.Unquote(s)
	if err != nil {
		return s
	}
	return u
}
