package record

import (
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// The records are a leaf: the store and the public API both import them,
// so they may import nothing of the module (a record that needed the
// store would bring its rows back into the public API).
func TestTheRecordsImportNothingOfTheKernel(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for name, f := range pkgs["record"].Files {
		files++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") && !strings.HasSuffix(name, "_test.go") {
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
	if files == 0 {
		t.Fatal("read no file of package record")
	}
}
