package cli

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The release binaries link no test servers: the strict fake API server
// (llm/llmtest), net/http/httptest and the testing package stay in tests.
// The scripted provider users run with --provider script lives in
// llm/script, which needs none of them.
func TestReleaseBinariesLinkNoTestServers(t *testing.T) {
	const cmd = "github.com/llmkernels/kernels/cmd/"
	out, err := exec.Command("go", "list", "-deps", cmd+"hermitcrab", cmd+"lumen", cmd+"solve").Output()
	if err != nil {
		t.Fatalf("go list -deps of the three commands: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 || !strings.Contains(string(out), "github.com/llmkernels/kernels/llm/script\n") {
		t.Fatalf("go list gave %d packages, without llm/script: not the binaries' dependencies", len(deps))
	}
	for _, d := range deps {
		switch d {
		case "net/http/httptest", "testing", "github.com/llmkernels/kernels/llm/llmtest":
			t.Errorf("a release binary links %s", d)
		}
	}
}

// No binary can run a text/template: a program that can keeps every
// exported method of every type it links (the linker cannot tell which
// a template calls), which doubled the binaries' size. cobra imports
// text/template but runs it only for a template set with SetXTemplate.
func TestBinariesRunNoTemplate(t *testing.T) {
	if testing.Short() {
		t.Skip("links the three binaries")
	}
	for _, name := range []string{"hermitcrab", "lumen", "solve"} {
		cmd := exec.Command("go", "build", "-o", os.DevNull, "-ldflags=-dumpdep", "github.com/llmkernels/kernels/cmd/"+name)
		out, err := cmd.CombinedOutput() // the linker writes the reachable symbols to stderr
		if err != nil {
			t.Fatalf("go build %s: %v\n%s", name, err, out)
		}
		if !bytes.Contains(out, []byte("main.main")) {
			t.Fatalf("go build -ldflags=-dumpdep %s listed no symbols: %.500s", name, out)
		}
		if bytes.Contains(out, []byte("-> text/template.(*Template).Execute")) {
			t.Errorf("%s can run a text/template (go build -ldflags=-dumpdep ./cmd/%s shows who reaches text/template.(*Template).Execute)", name, name)
		}
	}
}

// Each command parses flags, calls its kernel and prints: from this module
// its code imports its kernel's root package, the LLM runtime, the shared
// command code and the basement (internal/), never a package of a kernel
// (a store, the loops, the beach) nor another kernel.
func TestTheCommandsImportOnlyTheirKernelsRootPackage(t *testing.T) {
	const module = "github.com/llmkernels/kernels/"
	for _, kernel := range []string{"hermitcrab", "lumen", "solve"} {
		out, err := exec.Command("go", "list", "-f", "{{join .Imports \" \"}}", module+"cmd/"+kernel).Output()
		if err != nil {
			t.Fatalf("go list cmd/%s: %v", kernel, err)
		}
		if !strings.Contains(string(out), module+kernel+" ") && !strings.HasSuffix(strings.TrimSpace(string(out)), module+kernel) {
			t.Fatalf("go list gave %q: not the command's imports", out)
		}
		for _, p := range strings.Fields(string(out)) {
			p, ours := strings.CutPrefix(p, module)
			switch {
			case !ours, p == kernel, p == "llm", strings.HasPrefix(p, "llm/"), strings.HasPrefix(p, "cmd/internal/"), strings.HasPrefix(p, "internal/"):
			default:
				t.Errorf("cmd/%s imports %s", kernel, p)
			}
		}
	}
}
