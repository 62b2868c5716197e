package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// lumen run --demo, as a newcomer runs it: no key, whatever provider the
// environment names; a new instance in a temporary directory the output
// names, two chat turns and two cycles on the embedded script, said to be
// a demo; the instance it leaves passes its own audit.
func TestRunDemoMakesAnInstanceTalksAndRunsTwoCycles(t *testing.T) {
	bin := lumenBinary(t)
	tmp, cwd := t.TempDir(), t.TempDir()
	cmd := exec.Command(bin, "run", "--demo")
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "ANTHROPIC_API_KEY=", "LLMKERNELS_PROVIDER=openai")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("lumen run --demo: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	made, _ := filepath.Glob(filepath.Join(tmp, "lumen-demo-*"))
	if len(made) != 1 {
		t.Fatalf("the demo made %v in TMPDIR", made)
	}
	dir := made[0]
	for _, want := range []string{"this is a demo", "A scripted model plays the LLM", "nothing is charged", "demo instance: " + dir + "\n",
		"you> Hello! Who are you?\nlumen> Hello! I am a new mind", "lumen> Thank you, Sam.",
		`cycle 1 · `, `chose #1 "ask Sam what matters to them"`, "run: 2 cycles (1 action, 1 explore; 0 idle, 0 failed)",
		"demo finished", "lumen audit --dir " + dir} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errb.String(), `changed: add value "curiosity"`) {
		t.Errorf("the reflection's changes are not on stderr:\n%s", errb.String())
	}
	if left, _ := os.ReadDir(cwd); len(left) > 0 {
		t.Errorf("the demo wrote into the current directory: %v", left)
	}
	audit := exec.Command(bin, "audit", "--dir", dir)
	if b, err := audit.CombinedOutput(); err != nil {
		t.Errorf("lumen audit on the demo's instance: %v\n%s", err, b)
	}

	// --dir names the instance's directory instead; what the demo sets
	// itself is refused.
	named := filepath.Join(t.TempDir(), "mind")
	if b, err := exec.Command(bin, "run", "--demo", "--dir", named).CombinedOutput(); err != nil || !strings.Contains(string(b), "demo instance: "+named+"\n") {
		t.Errorf("run --demo --dir: %v\n%s", err, b)
	}
	b, err := exec.Command(bin, "run", "--demo", "--cycles", "9").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(b), "drop --cycles") {
		t.Errorf("run --demo --cycles 9: %v\n%s", err, b)
	}
	// Flags the script cannot follow are refused before anything is
	// made. (Before, --reflect-every 1 failed on a request the script does
	// not answer, and a cap on the unpriced scripted model, each after the
	// instance was made in --dir, so the same demo could not run again.)
	for _, flag := range [][]string{{"--reflect-every", "1"}, {"--max-cost", "1"}, {"--max-cost-day", "1"}} {
		left := filepath.Join(t.TempDir(), "mind")
		b, err := exec.Command(bin, append([]string{"run", "--demo", "--dir", left}, flag...)...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(b), "drop "+flag[0]) {
			t.Errorf("run --demo %v: %v\n%s", flag, err, b)
		}
		if _, err := os.Stat(left); err == nil {
			t.Errorf("run --demo %v left an instance in --dir", flag)
		}
	}
	if h, _ := exec.Command(bin, "run", "--help").Output(); !strings.Contains(string(h), "--demo") {
		t.Errorf("lumen run --help does not show --demo:\n%s", h)
	}
	// With no key, the message points to the demo.
	chat := exec.Command(bin, "chat", "--dir", dir)
	chat.Env = append(os.Environ(), "ANTHROPIC_API_KEY=", "LLMKERNELS_PROVIDER=")
	if b, _ := chat.CombinedOutput(); !strings.Contains(string(b), "no Anthropic API key") || !strings.Contains(string(b), "lumen run --demo") {
		t.Errorf("lumen chat without a key:\n%s", b)
	}
}

// lumen chat --demo answers four lines from its script in a new instance,
// whatever is typed, said to be a demo; a fifth line is a failed turn
// that the chat survives.
func TestChatDemoAnswersFourLines(t *testing.T) {
	bin := lumenBinary(t)
	dir := filepath.Join(t.TempDir(), "mind")
	cmd := exec.Command(bin, "chat", "--demo", "--dir", dir)
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=")
	cmd.Stdin = strings.NewReader("hi\nwho are you?\nok\nbye\nmore?\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("lumen chat --demo: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	for _, want := range []string{"this is a demo", "nothing is charged", "demo instance: " + dir + "\n", "lumen> Hello! I am the demo's scripted mind",
		"lumen> That was my last canned answer"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
	if n := strings.Count(out.String(), "lumen> "); n != 4 {
		t.Errorf("%d replies, want 4:\n%s", n, out.String())
	}
	if !strings.Contains(errb.String(), "lumen: this turn failed (your input is kept in memory)") || !strings.Contains(errb.String(), "no entry answers the request") {
		t.Errorf("the fifth line's failure is not said:\n%s", errb.String())
	}
	if h, _ := exec.Command(bin, "chat", "--help").Output(); !strings.Contains(string(h), "--demo") {
		t.Errorf("lumen chat --help does not show --demo:\n%s", h)
	}
}

// The demo plays the docs' walk-through scripts: its copies are the same.
func TestTheDemoScriptsAreTheWalkThroughs(t *testing.T) {
	for name, embedded := range map[string][]byte{"demo-chat.json": demoChatScript, "demo-run.json": demoRunScript} {
		want, err := os.ReadFile(filepath.Join("../../lumen/testdata", name))
		if err != nil || !bytes.Equal(embedded, want) {
			t.Errorf("cmd/lumen/demo/%s differs from lumen/testdata/%s (%v): copy it again", name, name, err)
		}
	}
}
