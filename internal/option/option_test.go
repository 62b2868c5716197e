package option

import (
	"errors"
	"io/fs"
	"testing"
)

func TestAnOptionErrorNamesItsFieldAndKeepsItsCause(t *testing.T) {
	err := error(Errorf("shell_file", "reading %s: %w", "x.json", fs.ErrNotExist))
	var e *Error
	if !errors.As(err, &e) || e.Field != "shell_file" || err.Error() != "shell_file: reading x.json: file does not exist" {
		t.Fatalf("%v (%#v)", err, e)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the cause is lost")
	}
	if Errorf("beach", "want http").Err != nil {
		t.Fatal("a cause where there is none")
	}
	if got := Errorf("path", "is required").Error(); got != "path is required" {
		t.Fatalf("a problem that reads on from the name: %q", got)
	}
}
