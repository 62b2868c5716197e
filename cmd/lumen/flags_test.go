package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The kernel names the option it cannot take; the command names the flag.
// A spend cap with a model the price table lacks is refused as the price
// table's fault (--prices), before any call; a directory without an
// instance says how to make one.
func TestKernelErrorsAreToldInTheCommandsTerms(t *testing.T) {
	bin, dir := lumenInstance(t)
	testdata, _ := filepath.Abs("../../lumen/testdata")
	for _, c := range []struct {
		args   []string
		status int
		want   string
	}{
		{[]string{"run", "--max-cost", "1", "--provider", "script", "--model", "my-local-model", "--script", filepath.Join(testdata, "demo-run.json"), "--dir", dir},
			2, `--prices has no price for model "my-local-model"`},
		{[]string{"status", "--dir", filepath.Join(dir, "nothing")}, 1, "run `lumen init --dir " + filepath.Join(dir, "nothing") + "` first, or pass --dir"},
		{[]string{"memory", "search", " ", "--dir", dir}, 2, "QUERY is empty"},
	} {
		cmd := exec.Command(bin, c.args...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		cmd.Run()
		if cmd.ProcessState.ExitCode() != c.status || !strings.Contains(errb.String(), c.want) {
			t.Errorf("lumen %v: exit %d, stderr %q; want %d and %q", c.args, cmd.ProcessState.ExitCode(), errb.String(), c.status, c.want)
		}
	}
}

// The skills listing says what network a skill declares and what of it
// was allowed, and how to allow the rest.
func TestTheSkillsListingSaysWhatNetworkASkillMayReach(t *testing.T) {
	for _, c := range []struct {
		declared, allowed []string
		want              string
	}{
		{nil, nil, ""},
		{[]string{"a:443"}, []string{"a:443"}, "network allowed: a:443"},
		{[]string{"a:443", "b:80"}, []string{"a:443"}, "network allowed: a:443; declared, not allowed: a:443, b:80 (lumen skills allow web --network)"},
		{[]string{"b:80"}, nil, "network declared, not allowed: b:80 (lumen skills allow web --network)"},
	} {
		if got := networkLine("web", c.declared, c.allowed); got != c.want {
			t.Errorf("networkLine(%v, %v) = %q, want %q", c.declared, c.allowed, got, c.want)
		}
	}
}
