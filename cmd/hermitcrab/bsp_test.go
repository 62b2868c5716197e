package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// bspOut runs hermitcrab bsp and reads its JSON: the mode, and the
// addresses of the entries it lists.
func bspOut(t *testing.T, data string, args ...string) (mode, addresses string) {
	t.Helper()
	out, _ := mustHC(t, data, "", append([]string{"bsp"}, args...)...)
	var r struct {
		Mode    string
		Entries []struct{ Address string }
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("bsp %q printed %s: %v", args, out, err)
	}
	var as []string
	for _, e := range r.Entries {
		as = append(as, e.Address)
	}
	return r.Mode, strings.Join(as, ",")
}

func TestBSPTakesTheModeAndDiscTakesThePointAlone(t *testing.T) {
	data := t.TempDir()
	children := "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9"
	tests := []struct {
		args                []string
		mode, wantAddresses string
	}{
		{[]string{"--mode", "ring", "wake", "0.9.2"}, "ring", "0.91,0.93,0.94,0.95,0.96"},
		{[]string{"wake", "0.9.4", "--mode=dir"}, "dir", "0.94,0.941,0.942,0.943,0.944"},
		{[]string{"--mode", "dir", "wake", "0.9", "-1"}, "dir", "0.9"},
		{[]string{"--mode", "disc", "wake", "-1"}, "disc", children},
		{[]string{"wake", "", "-1"}, "disc", children},
		{[]string{"wake", "0.9*"}, "star", ""},
		{[]string{"wake", "0.9"}, "spindle", ""},
	}
	for _, tt := range tests {
		if mode, as := bspOut(t, data, tt.args...); mode != tt.mode || as != tt.wantAddresses {
			t.Errorf("bsp %q: %s %s, want %s %s", tt.args, mode, as, tt.mode, tt.wantAddresses)
		}
	}
	// A query the mode cannot read is a usage error (2), named; a walk off
	// the tree is a failure (1).
	for _, tt := range []struct {
		args   []string
		status int
		want   string
	}{
		{[]string{"--mode", "tree", "wake"}, 2, `mode "tree": want one of block, spindle, point, ring, dir, disc, star`},
		{[]string{"--mode", "ring", "wake"}, 2, "ring mode needs a spindle"},
		{[]string{"wake", "0.x"}, 2, `'x' is not a digit`},
		{[]string{"wake", "0.9", "high"}, 2, `point: pscale "high"`},
		{[]string{"--mode", "ring", "wake", "0.99"}, 1, "digit 9 not present"},
	} {
		_, errOut, err := hc(t, data, "", append([]string{"bsp"}, tt.args...)...)
		exit, _ := err.(*exec.ExitError)
		if exit == nil || exit.ExitCode() != tt.status || !strings.Contains(errOut, tt.want) {
			t.Errorf("bsp %q: %v %q, want exit %d and %q", tt.args, err, errOut, tt.status, tt.want)
		}
	}
	if out, _ := mustHC(t, data, "", "bsp", "--help"); !strings.Contains(out, "--mode star NAME SPINDLE") || !strings.Contains(out, "--mode disc NAME POINT") {
		t.Errorf("bsp --help does not teach the modes:\n%s", out)
	}
}
