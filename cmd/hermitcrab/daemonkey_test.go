package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// wake --daemon with no key and no triggers says both and waits (it does
// not exit "no API key"); a key stored while it runs is taken up.
func TestWakeDaemonWithoutAKeyOrTriggersSaysSoAndWaits(t *testing.T) {
	data := t.TempDir()
	cmd := exec.Command(binary, "--data", data, "wake", "--daemon", "--interval", "100ms")
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=", "HERMITCRAB_DATA=", "LLMKERNELS_PROVIDER=")
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopAtCleanup(t, cmd, "wake --daemon")
	lines := make(chan string, 100)
	go func() {
		for s := bufio.NewScanner(r); s.Scan(); {
			lines <- s.Text()
		}
		close(lines)
	}()
	var seen []string
	waitFor := func(want string) {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the daemon ended before saying %q:\n%s", want, strings.Join(seen, "\n"))
				}
				seen = append(seen, l)
				if strings.Contains(l, want) {
					return
				}
			case <-deadline:
				t.Fatalf("the daemon did not say %q:\n%s", want, strings.Join(seen, "\n"))
			}
		}
	}
	waitFor("no API key yet: the daemon runs and waits")
	waitFor("no triggers at wake 0.4 or 0.5 yet: waiting")
	time.Sleep(500 * time.Millisecond) // several passes
	if cmd.ProcessState != nil {
		t.Fatalf("the daemon exited: %v", cmd.ProcessState)
	}
	mustHC(t, data, "sk-ant-stored-later\n", "key", "set")
	waitFor("API key found")
	for _, l := range seen {
		if strings.Contains(l, "anthropic.Config") || strings.Contains(l, "llm/") {
			t.Errorf("a Go identifier reached the person: %q", l)
		}
	}
}

// With no key, a command that needs one names every fix, the demo among
// them, and no Go identifier.
func TestNoKeyNamesTheFixes(t *testing.T) {
	_, errOut, err := hc(t, t.TempDir(), "", "boot")
	if err == nil {
		t.Fatal("boot without a key succeeded")
	}
	for _, want := range []string{"ANTHROPIC_API_KEY", "console.anthropic.com", "'hermitcrab key set'", "--provider", "hermitcrab serve --demo"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the message lacks %q: %s", want, errOut)
		}
	}
	if strings.Contains(errOut, "Config") || strings.Contains(errOut, "llm/") {
		t.Errorf("a Go identifier in: %s", errOut)
	}
}
