package llm

import (
	"os/exec"
	"strings"
	"testing"
)

// The floors (docs/design/README.md): llm and its subpackages stand on the
// basement, the packages of internal/ that import nothing of this module
// but each other, and on nothing else of the module. No basement package
// imports llm, pscale or a kernel. The command platform (cmd/internal/cli,
// cmd/internal/provider) stands on llm, and nothing but a command imports it.
func TestTheFloors(t *testing.T) {
	const module = "github.com/llmkernels/kernels/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	basement := func(p string) bool { return strings.HasPrefix(p, "internal/") }
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
			case strings.HasPrefix(imp, "cmd/") && !strings.HasPrefix(pkg, "cmd/"):
				t.Errorf("%s imports %s: only commands stand on the command platform", pkg, imp)
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
