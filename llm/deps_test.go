package llm

import (
	"os/exec"
	"strings"
	"testing"
)

// The floors (docs/design/README.md): llm and its subpackages stand on the
// basement, the packages of internal/ that import nothing of this module
// but each other, and on nothing else of the module. No basement package
// imports llm, pscale or a kernel. The command platform (internal/cli,
// internal/provider) is not in the basement: it stands on llm, and moves
// to cmd/internal.
func TestTheFloors(t *testing.T) {
	const module = "github.com/llmkernels/kernels/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	platform := map[string]bool{"internal/cli": true, "internal/provider": true}
	basement := func(p string) bool { return strings.HasPrefix(p, "internal/") && !platform[p] }
	checked := 0
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		pkg, _ := strings.CutPrefix(f[0], module)
		for _, imp := range f[1:] {
			imp, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			switch {
			case basement(pkg) && !basement(imp):
				t.Errorf("%s (the basement) imports %s, a floor above it", pkg, imp)
			case (pkg == "llm" || strings.HasPrefix(pkg, "llm/")) && imp != "llm" && !strings.HasPrefix(imp, "llm/") && !basement(imp):
				t.Errorf("%s imports %s: llm stands on the basement alone", pkg, imp)
			}
		}
		if pkg == "llm" || basement(pkg) {
			checked++
		}
	}
	if checked < 10 {
		t.Fatalf("go list gave %d packages of llm and the basement: not this module's packages\n%s", checked, out)
	}
}
