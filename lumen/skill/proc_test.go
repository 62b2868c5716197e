//go:build linux

package skill

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/internal/proc/proctest"
)

// TestSkillsRunWithoutSecretsAndLeaveNoChild pins that a skill (model-written
// code) sees no provider key unless the user passes it on by name, and that a
// child it leaves running, even in a new session, does not outlive it.
func TestSkillsRunWithoutSecretsAndLeaveNoChild(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-skill-test-0123")
	t.Setenv("WEATHER_API_KEY", "weather-0123456789")
	t.Setenv("LLMKERNELS_PASS_ENV", "WEATHER_API_KEY")
	r := newRunner(t)
	writeSkill(t, r, "env", `import os, subprocess
child = subprocess.Popen(["sleep", "60"], start_new_session=True)
print(os.environ.get("ANTHROPIC_API_KEY", "none"), os.environ.get("WEATHER_API_KEY", "none"), child.pid)
`)
	res, err := r.Invoke(context.Background(), "env", Request{})
	if err != nil || !res.OK {
		t.Fatalf("env skill: %+v, %v", res, err)
	}
	f := strings.Fields(res.Output)
	if len(f) != 3 || f[0] != "none" || f[1] != "weather-0123456789" {
		t.Fatalf("the skill saw %q; want no Anthropic key and the passed weather key", res.Output)
	}
	pid, _ := strconv.Atoi(f[2])
	if left := proctest.WaitGone([]int{pid}, time.Now().Add(10*time.Second)); len(left) > 0 {
		t.Fatalf("the skill's child %d outlived it", pid)
	}
}
