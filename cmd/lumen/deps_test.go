package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The command parses flags, calls the lumen package and prints: from this
// module it imports lumen's root package, the LLM runtime and the shared
// command code, never a package of the kernel's own (memory, skill, the
// loops) nor another kernel. Its tests hold to it too, with the shared
// test helpers besides.
func TestTheCommandImportsOnlyTheKernelsRootPackage(t *testing.T) {
	const module = "github.com/llmkernels/kernels/"
	allowed := func(p string, test bool) bool {
		switch p := strings.TrimPrefix(p, module); {
		case p == "lumen", p == "llm", strings.HasPrefix(p, "llm/"), p == "cmd/internal/cli", p == "cmd/internal/provider", p == "internal/termtext":
			return true
		case test:
			return p == "cmd/internal/cli/clitest" || p == "internal/rodir"
		}
		return false
	}
	out, err := exec.Command("go", "list", "-f", "{{join .Imports \" \"}}|{{join .TestImports \" \"}} {{join .XTestImports \" \"}}", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	code, tests, _ := strings.Cut(strings.TrimSpace(string(out)), "|")
	if !strings.Contains(code, module+"lumen") {
		t.Fatalf("go list gave %q: not the command's imports", code)
	}
	for i, imports := range []string{code, tests} {
		for _, p := range strings.Fields(imports) {
			if strings.HasPrefix(p, module) && !allowed(p, i == 1) {
				t.Errorf("cmd/lumen imports %s", p)
			}
		}
	}
}
