package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The command parses flags, calls the solve package and prints: from
// this module its code imports solve's root package, the LLM runtime and
// the shared command code, never a package of the kernel's own (store,
// loop, planning, workspace) nor the internals beneath them.
func TestTheCommandImportsOnlyTheKernelsRootPackage(t *testing.T) {
	const module = "github.com/llmkernels/kernels/"
	out, err := exec.Command("go", "list", "-f", "{{join .Imports \" \"}}", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), module+"solve") {
		t.Fatalf("go list gave %q: not the command's imports", out)
	}
	for _, p := range strings.Fields(string(out)) {
		switch strings.TrimPrefix(p, module) {
		case "solve", "llm", "cmd/internal/cli", "cmd/internal/provider", "internal/termtext":
		default:
			if strings.HasPrefix(p, module) && !strings.HasPrefix(p, module+"llm/") {
				t.Errorf("cmd/solve imports %s", p)
			}
		}
	}
}
