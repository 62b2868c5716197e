package cli

import (
	"os/exec"
	"strings"
	"testing"
)

// The release binaries link no test servers: the strict fake API server
// (llm/llmtest), net/http/httptest and the testing package stay in tests.
// The scripted provider users run with --provider script lives in
// llm/script, which needs none of them.
func TestReleaseBinariesLinkNoTestServers(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/llmkernels/kernels/cmd/...").Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/...: %v", err)
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
