package store

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// sqlStatement matches the start of an SQL statement in a string literal.
var sqlStatement = regexp.MustCompile(`(?is)\b(select\s.+\sfrom\s|insert\s+(or\s+\w+\s+)?into\s+\w+\s*(\(|values|select)|update\s+\w+\s+set\s|delete\s+from\s|create\s+(table|index|view|trigger)\s|alter\s+table\s|drop\s+(table|index)\s|pragma\s+\w+|with\s+recursive\s)`)

// No SQL outside solve/store: every non-test Go source of solve (and of
// cmd/solve) is parsed and its string literals searched for a statement,
// and no .sql file lives elsewhere. Tests may query kernel.db to check
// what the kernel wrote, as a user with sqlite3 would; the kernel may not.
func TestNoSQLOutsideTheStore(t *testing.T) {
	var found []string
	for _, root := range []string{"..", "../../cmd/solve"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if abs, _ := filepath.Abs(path); abs == mustAbs(t, ".") || d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			switch {
			case strings.HasSuffix(path, ".sql"):
				found = append(found, path+": an SQL file")
			case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
				found = append(found, sqlLiterals(t, path)...)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(found) > 0 {
		t.Errorf("SQL outside solve/store (move it behind a store method):\n%s", strings.Join(found, "\n"))
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func sqlLiterals(t *testing.T, path string) []string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			s = lit.Value
		}
		if m := sqlStatement.FindString(s); m != "" {
			out = append(out, fmt.Sprintf("%s: %q", fset.Position(lit.Pos()), clipLine(m)))
		}
		return true
	})
	return out
}

func clipLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// The check itself finds a statement, wherever it hides in a literal.
func TestSQLStatementPattern(t *testing.T) {
	for _, s := range []string{"SELECT id FROM nodes", "select count(*)\n\tfrom logs", "INSERT INTO logs (id) VALUES (?)", "UPDATE nodes SET status = ?",
		"DELETE FROM node_dependencies", "PRAGMA user_version", "CREATE TABLE x (id TEXT)", "WITH RECURSIVE d(id) AS (SELECT 1)", "INSERT OR IGNORE INTO t (a) VALUES (1)"} {
		if !sqlStatement.MatchString(s) {
			t.Errorf("%q not recognized as SQL", s)
		}
	}
	for _, s := range []string{"select the constraints that matter", "Update the plan", "the insert into the workspace", "from parent reserve", "delete it"} {
		if sqlStatement.MatchString(s) {
			t.Errorf("%q taken for SQL", s)
		}
	}
}
