package llm

import (
	"os/exec"
	"strings"
	"testing"
)

// llm is the ground floor: internal/cli and internal/provider import it,
// so it imports nothing of this module's internal/ (an arrow running back
// up). Its subpackages stand on it alone, too.
func TestLLMImportsNothingOfTheModulesInternal(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/llmkernels/kernels/llm/...").Output()
	if err != nil {
		t.Fatalf("go list -deps ./llm/...: %v", err)
	}
	if !strings.Contains(string(out), "github.com/llmkernels/kernels/llm\n") {
		t.Fatalf("go list did not list llm itself: %s", out)
	}
	for _, d := range strings.Fields(string(out)) {
		if strings.HasPrefix(d, "github.com/llmkernels/kernels/internal/") {
			t.Errorf("llm depends on %s", d)
		}
	}
}
