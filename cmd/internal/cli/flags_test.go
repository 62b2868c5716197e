package cli

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/internal/proc"
)

// flagCall is a pflag definition: String("name", …), StringVar(&v,
// "name", …), BoolP("name", "n", …), Var(&v, "name", …) and the like.
var flagCall = regexp.MustCompile(`^(String|Bool|Int|Int64|Uint|Float64|Duration|Count|StringSlice|StringArray|StringToString)?(Var)?P?$`)

// ourFlags is every flag name the commands' code (cmd/) defines.
func ourFlags(t *testing.T, root string) map[string]bool {
	flags := map[string]bool{}
	walkGo(t, filepath.Join(root, "cmd"), func(fset *token.FileSet, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name == "" || !flagCall.MatchString(sel.Sel.Name) {
				return true
			}
			for _, a := range call.Args {
				if s, ok := literal(a); ok {
					if regexp.MustCompile(`^[a-z][a-z0-9-]+$`).MatchString(s) {
						flags[s] = true
					}
					break
				}
			}
			return true
		})
	})
	return flags
}

// walkGo parses every non-test Go file under dir.
func walkGo(t *testing.T, dir string, visit func(*token.FileSet, *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		visit(fset, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func literal(e ast.Expr) (string, bool) {
	b, ok := e.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(b.Value)
	return s, err == nil
}

// errorText is whether a call makes an error or answers one: errors.New,
// fmt.Errorf and every other …Errorf, writeError, invalid(…).
func errorText(call *ast.CallExpr) bool {
	name := ""
	switch f := call.Fun.(type) {
	case *ast.Ident:
		name = f.Name
	case *ast.SelectorExpr:
		name = f.Sel.Name
		if x, ok := f.X.(*ast.Ident); ok && x.Name == "errors" && name == "New" {
			return true
		}
	}
	return strings.HasSuffix(name, "Errorf") || name == "writeError" || name == "invalid"
}

// stillNamed are the library errors that name a flag of ours all the
// same, each with why: a foreign program's flag of the same name.
var stillNamed = map[string]string{
	"solve/planning/smt/smt.go --version": "z3's own flag: the error is of the command z3 --version",
}

// No library error names one of our flags: a library (everything outside
// cmd/) returns a typed error, and the command that knows its flags says
// which one takes the fix. The errors are the string literals given to
// errors.New, fmt.Errorf and the like, set in a …Error type's fields or
// returned by an Error method.
func TestNoLibraryErrorNamesAFlag(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	flags := ourFlags(t, root)
	for _, f := range []string{"remote", "demo", "db", "budget", "allow-network", "data"} {
		if !flags[f] {
			t.Fatalf("the scan of cmd/ found no --%s among %d flags: it does not read the flags", f, len(flags))
		}
	}
	flagRef := regexp.MustCompile(`--([a-z][a-z0-9-]*)`)
	check := func(fset *token.FileSet, e ast.Expr) {
		s, ok := literal(e)
		if !ok {
			return
		}
		for _, m := range flagRef.FindAllStringSubmatch(s, -1) {
			pos := fset.Position(e.Pos())
			rel, _ := filepath.Rel(root, pos.Filename)
			key := filepath.ToSlash(rel) + " --" + m[1]
			if flags[m[1]] && stillNamed[key] == "" {
				t.Errorf("%s:%d: a library error names the flag --%s: return a typed error and let the command name the flag", filepath.ToSlash(rel), pos.Line, m[1])
			}
		}
	}
	var checked int
	for _, dir := range []string{"hermitcrab", "lumen", "solve", "llm", "internal", "pscale"} {
		walkGo(t, filepath.Join(root, dir), func(fset *token.FileSet, f *ast.File) {
			checked++
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					if errorText(n) {
						for _, a := range n.Args {
							ast.Inspect(a, func(n ast.Node) bool {
								if e, ok := n.(ast.Expr); ok {
									check(fset, e)
								}
								return true
							})
						}
					}
				case *ast.CompositeLit:
					if id := typeName(n.Type); strings.HasSuffix(id, "Error") {
						for _, el := range n.Elts {
							if kv, ok := el.(*ast.KeyValueExpr); ok {
								ast.Inspect(kv.Value, func(n ast.Node) bool {
									if e, ok := n.(ast.Expr); ok {
										check(fset, e)
									}
									return true
								})
							}
						}
					}
				case *ast.FuncDecl:
					if n.Recv != nil && n.Name.Name == "Error" && n.Body != nil {
						ast.Inspect(n.Body, func(n ast.Node) bool {
							if e, ok := n.(ast.Expr); ok {
								check(fset, e)
							}
							return true
						})
					}
				}
				return true
			})
		})
	}
	if checked < 100 {
		t.Fatalf("checked %d library files: not the module's libraries", checked)
	}
}

func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.StarExpr:
		return typeName(e.X)
	}
	return ""
}

// A refusal to run unconfined says so in words in the library; the
// command adds the flag that lifts it.
func TestTheCommandNamesTheFlagThatLiftsAConfinementRefusal(t *testing.T) {
	app := New("kernel", "test", "test")
	app.Root.AddCommand(&cobra.Command{Use: "skill", RunE: func(*cobra.Command, []string) error {
		return fmt.Errorf("run skill x: %w", &proc.UnavailableError{Reason: "this Linux kernel has no Landlock"})
	}})
	var errOut bytes.Buffer
	app.Root.SetErr(&errOut)
	if status := app.Execute(context.Background(), []string{"skill"}); status != ExitFailure ||
		!strings.Contains(errOut.String(), "no Landlock") || !strings.Contains(errOut.String(), "--unconfined runs it unconfined") {
		t.Fatalf("exit %d\n%s", status, errOut.String())
	}
}
