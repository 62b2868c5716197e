package exporttest

import (
	"slices"
	"strings"
	"testing"
)

func TestItFindsTheNamesOnlyTestsUse(t *testing.T) {
	got, err := TestOnly("testdata/mod", "lib", "libtest", "cmd")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"example.com/mod/lib: Config.Peek",
		"example.com/mod/lib: OnlyTests",
		"example.com/mod/lib: Unused",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := TestOnly("testdata/mod", "nothing"); err == nil {
		t.Error("a tree without packages passed")
	}
}

// documented are exported names of the shared runtime that no code of
// the module calls but that docs/llm.md offers to the library's users.
var documented = map[string]bool{
	"github.com/llmkernels/kernels/llm: Message.WithCacheControl":   true,
	"github.com/llmkernels/kernels/llm: Usage.EffectiveInputTokens": true,
}

// The shared runtime (llm/..., internal/...) exports nothing only tests
// use: such a name goes unexported, or into export_test.go.
func TestTheSharedRuntimeExportsNothingOnlyTestsUse(t *testing.T) {
	leaks, err := TestOnly("../..", "llm", "internal")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leaks {
		if !documented[l] {
			t.Errorf("%s is used only by tests: unexport it or move it to export_test.go", l)
		}
	}
}
