package skill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/internal/proc"
	"github.com/llmkernels/kernels/internal/proc/proctest"
)

func requireConfinement(t *testing.T) {
	t.Helper()
	if s := proc.Probe(); !s.Available {
		t.Skipf("confinement not available here: %s", s.Reason)
	}
}

// escapeSkill is a skill whose run tries every escape of proctest.Escape.
func escapeSkill(e *proctest.Escape) string {
	return "import sys\nif \"--help\" in sys.argv:\n    print(\"escape: tries to leave its confinement. Input: none. Output: what happened.\")\n    sys.exit(0)\n" + e.Python()
}

// TestASkillRunsConfined pins that a skill reads and writes its own
// directory but cannot read an SSH key or an API key file, write outside,
// follow a link out, reach the network, fork 10,000 processes, allocate
// 8 GiB or write 10 GB; each refusal is in the result the run records.
func TestASkillRunsConfined(t *testing.T) {
	requireConfinement(t)
	e := proctest.NewEscape(t)
	r := newRunner(t)
	r.testWrite = nil
	r.Limits = proc.Limits{Processes: 64, Memory: 1 << 30, Output: 1 << 20}
	writeSkill(t, r, "escape", escapeSkill(e))
	if err := os.WriteFile(filepath.Join(r.Dir, "escape", "input.txt"), []byte("in"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := r.Invoke(context.Background(), "escape", Request{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s\nerror: %s\nstderr: %s", res.Output, res.Error, res.Stderr)
	e.Check(t, res.Output)
	if data, err := os.ReadFile(filepath.Join(r.Dir, "escape", "output.txt")); err != nil || string(data) != "written" {
		t.Errorf("the skill's output file: %q %v", data, err)
	}
	if res.Unconfined {
		t.Error("the result says the skill ran unconfined")
	}
}

// TestASkillReachesOnlyWhatThePersonAllowed pins the network of a skill:
// none, though its skill.json declares a need, until the person allows
// it; then what it declared; a need declared later is not allowed until
// allowed again.
func TestASkillReachesOnlyWhatThePersonAllowed(t *testing.T) {
	requireConfinement(t)
	r := newRunner(t)
	_, port, _ := net.SplitHostPort(proctest.LoopbackServer(t))
	_, otherPort, _ := net.SplitHostPort(proctest.LoopbackServer(t))
	writeSkill(t, r, "fetch", fmt.Sprintf(`import socket, sys
if "--help" in sys.argv:
    print("fetch: connects. Input: none. Output: what happened.")
    sys.exit(0)
for port in (%s, %s):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
        print(port, "CONNECTED")
    except OSError as e:
        print(port, "refused", e)
`, port, otherPort))
	manifest := func(entries ...string) {
		data, _ := json.Marshal(Manifest{Network: entries})
		if err := os.WriteFile(filepath.Join(r.Dir, "fetch", ManifestFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	connected := func() string {
		res, err := r.Invoke(context.Background(), "fetch", Request{})
		if err != nil || !res.OK {
			t.Fatalf("fetch: %v %+v", err, res)
		}
		var ports []string
		for _, line := range strings.Split(res.Output, "\n") {
			if p, ok := strings.CutSuffix(line, " CONNECTED"); ok {
				ports = append(ports, p)
			}
		}
		return strings.Join(ports, ",")
	}
	manifest("localhost:" + port)
	if got := connected(); got != "" {
		t.Fatalf("declared but not allowed: connected to %s", got)
	}
	if allowed, err := r.AllowNetwork("fetch"); err != nil || len(allowed) != 1 {
		t.Fatalf("allow: %v %v", allowed, err)
	}
	if got := connected(); got != port {
		t.Fatalf("allowed %s: connected to %q", port, got)
	}
	manifest("localhost:"+port, "localhost:"+otherPort)
	declared, allowed, err := r.Network("fetch")
	if got := connected(); got != port || err != nil || len(declared) != 2 || len(allowed) != 1 {
		t.Fatalf("a need declared later: connected to %q; declared %v, allowed %v (%v)", got, declared, allowed, err)
	}
	if _, err := r.AllowNetwork("chat-less"); err == nil {
		t.Error("allowing a skill that does not exist")
	}
	manifest("example.org")
	if res, err := r.Invoke(context.Background(), "fetch", Request{}); err != nil || res.OK || !strings.Contains(res.Error, "host:port") {
		t.Errorf("a skill.json entry without a port: %v %+v", err, res)
	}
}

// TestWhereConfinementIsNotAvailableASkillIsNotRun pins the refusal: the
// run fails saying why and naming --unconfined, the --help result is not
// cached, and with Unconfined the skill runs and its result says so.
func TestWhereConfinementIsNotAvailableASkillIsNotRun(t *testing.T) {
	r := newRunner(t)
	writeSkill(t, r, "echo", echo)
	// A machine without confinement: what proc.Run says there.
	r.testRun = func(ctx context.Context, c proc.Cmd) (*proc.Result, error) {
		if c.Confine == nil {
			return proc.Run(ctx, c)
		}
		return nil, fmt.Errorf("run %s: %w", c.Name, &proc.UnavailableError{Reason: "this Linux kernel has no Landlock"})
	}
	res, err := r.Invoke(context.Background(), "echo", Request{})
	if err != nil || res.OK || !strings.Contains(res.Error, "was not run") || !strings.Contains(res.Error, "unless the person running the kernel says so") {
		t.Fatalf("refused run: %v %+v", err, res)
	}
	var ue *proc.UnavailableError
	if _, err := r.Help(context.Background(), "echo"); !errors.As(err, &ue) {
		t.Fatalf("help: %v", err)
	}
	if c, _ := r.Cached("echo"); c.Checked {
		t.Fatal("the refusal was cached as the version's --help result")
	}
	r.Unconfined = true
	res, err = r.Invoke(context.Background(), "echo", Request{Input: json.RawMessage(`1`)})
	if err != nil || !res.OK || !res.Unconfined {
		t.Fatalf("unconfined run: %v %+v", err, res)
	}
	if !r.Ready(context.Background(), "echo") {
		t.Fatal("unconfined, the skill's --help passes")
	}
}
