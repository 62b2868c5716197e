package lumen

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/internal/proc"
	"github.com/llmkernels/kernels/internal/proc/proctest"
	"github.com/llmkernels/kernels/lumen/memory"
)

// A skill that tries to leave its confinement (read an SSH key and an API
// key file, write outside, follow a link out, reach the network, fork
// 10,000 processes, allocate 8 GiB, write 10 GB) is refused each time; the
// ACT memory records each refusal, and the loop goes on to its next cycle.
func TestASkillTryingToEscapeIsRefusedAndTheLoopGoesOn(t *testing.T) {
	if s := proc.Probe(); !s.Available {
		t.Skipf("confinement not available here: %s", s.Reason)
	}
	e := proctest.NewEscape(t)
	p := scripted(t,
		answer("think", thinkOf(Candidate{Action: "look around", Skill: "escape", Input: json.RawMessage(`{}`), Predicted: "found", Counterfactual: "nothing"})),
		answer("decide", decideAll([]string{"diligence"}, []string{"keep a journal"}, true, 1)),
		answer("record", recorded),
		answer("explore", exploration{Considered: []ConsideredQuestion{{"what now?", "clarity"}}, Question: "what now?", Why: "diligence", Skill: "chat",
			Input: json.RawMessage(`{"message":"What now?"}`)}),
	)
	in, _ := newInstance(t, "", func(root string) {
		journalState(root)
		dir := filepath.Join(root, "skills", "escape")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "main.py"), []byte("import sys\nif \"--help\" in sys.argv:\n    print(\"escape: looks around. Input: none. Output: what it found.\")\n    sys.exit(0)\n"+e.Python()), 0o644)
		os.WriteFile(filepath.Join(dir, "input.txt"), []byte("in"), 0o644)
	}, func(o *Options) {
		withScript(p)(o)
		o.SkillLimits = proc.Limits{Processes: 64, Memory: 1 << 30, Output: 1 << 20}
	})
	rep, err := in.Run(context.Background(), RunOptions{Cycles: 2, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	allUsed(t, p)
	if rep.Cycles != 2 || rep.Failed != 0 {
		t.Fatalf("run = %+v, want 2 cycles, none failed", rep)
	}
	act := find(byAuthor(t, in, memory.Kernel), "ACT: invoked skill escape")
	if act == nil {
		t.Fatal("no ACT memory for the escape skill")
	}
	result, _ := dataOf(t, *act)["result"].(map[string]any)
	output, _ := result["output"].(string)
	t.Logf("%s", output)
	e.Check(t, output)
	if find(byAuthor(t, in, memory.Kernel), "EXPLORE: invoked skill chat") == nil {
		for _, m := range byAuthor(t, in, memory.Kernel) {
			t.Log(m.Description)
		}
		t.Error("the loop did not go on to explore (the kernel memories are above)")
	}
}

// lumen skills allow NAME --network records the allowance (a kernel
// memory, and the listing shows it), and lumen status says how skills are
// confined.
func TestAllowingASkillsNetworkIsRecordedAndShown(t *testing.T) {
	in, _ := newInstance(t, "", func(root string) {
		os.WriteFile(filepath.Join(root, "skills", "chat", "skill.json"), []byte(`{"network": ["api.example.org:443"]}`), 0o644)
	}, nil)
	list, err := in.SkillStatuses()
	if err != nil || len(list) != 1 || len(list[0].Network) != 1 || len(list[0].NetworkAllowed) != 0 {
		t.Fatalf("before: %+v %v", list, err)
	}
	if _, err := in.AllowSkillNetwork("chat"); err != nil {
		t.Fatal(err)
	}
	if find(byAuthor(t, in, memory.Kernel), "ALLOW: skill chat may reach api.example.org:443") == nil {
		t.Error("no kernel memory of the allowance")
	}
	if list, _ = in.SkillStatuses(); len(list[0].NetworkAllowed) != 1 {
		t.Errorf("after: %+v", list)
	}
	st, err := in.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := "on: Landlock"
	if !proc.Probe().Available {
		want = "not available"
	}
	if !strings.HasPrefix(st.Confinement, want) || !strings.Contains(st.Text(), "\nconfined  "+st.Confinement+"\n") {
		t.Errorf("status confinement %q, want it to start %q and be in the text:\n%s", st.Confinement, want, st.Text())
	}
}
