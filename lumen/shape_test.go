package lumen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The kernel is a library: no package of it imports the command-line
// code (cmd/internal/cli and its test helpers) or another kernel, and no
// error it makes names a command-line flag. A field it cannot take is an
// option error naming the field; the command turns fields into flags.
// (A skill's --help is the skill protocol, not a flag of lumen's.)
func TestTheKernelSpeaksNoFlags(t *testing.T) {
	flag := regexp.MustCompile("(^|[\\s(`\"'])--[a-z]")
	makesError := map[string]bool{"fmt.Errorf": true, "errors.New": true, "option.Errorf": true}
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, banned := range []string{"cmd/internal/cli", "hermitcrab", "solve", "cmd"} {
				if banned = "github.com/llmkernels/kernels/" + banned; p == banned || strings.HasPrefix(p, banned+"/") {
					t.Errorf("%s imports %s", path, p)
				}
			}
		}
		if strings.HasSuffix(path, "_test.go") {
			return nil
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
				lit, ok := arg.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				s, _ := strconv.Unquote(lit.Value)
				if flag.MatchString(strings.ReplaceAll(s, "--help", "")) {
					t.Errorf("%s: an error names a flag: %s", fset.Position(lit.Pos()), s)
				}
			}
			return true
		})
		return nil
	})
	if err != nil || files < 30 {
		t.Fatalf("read %d files under lumen/: %v", files, err)
	}
}
