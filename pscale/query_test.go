package pscale

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

func TestParseModeKnowsTheSevenModes(t *testing.T) {
	for _, m := range Modes {
		for _, in := range []string{string(m), strings.ToUpper(string(m)), " " + string(m) + "\n"} {
			if got, err := ParseMode(in); err != nil || got != m {
				t.Errorf("ParseMode(%q) = %q, %v", in, got, err)
			}
		}
	}
	if got, err := ParseMode(" "); err != nil || got != "" {
		t.Errorf("blank mode = %q, %v; want the empty mode", got, err)
	}
	_, err := ParseMode("tree")
	if want := `mode "tree": want one of block, spindle, point, ring, dir, disc, star`; err == nil || err.Error() != want {
		t.Errorf("unknown mode: %v, want %q", err, want)
	}
}

func TestParseQueryReadsWhatToolsAndCommandsReceive(t *testing.T) {
	tests := []struct {
		mode           string
		spindle, point any
		want           string // mode|address|pscale
	}{
		{"", nil, nil, "block||"},
		{"", "", "", "block||"},
		{"", " ", " ", "block||"},
		{"", "0.12", nil, "spindle|0.12|"},
		{"", json.Number("0.10"), json.Number("-1"), "point|0.10|-1"},
		{"", nil, "-1", "disc||-1"},
		{"Ring", "0.1", nil, "ring|0.1|"},
		{"", "0.7*", nil, "star|0.7|"},
		{"star", " 0.7 * ", nil, "star|0.7|"},
		{"disc", nil, "-2", "disc||-2"},
		{"dir", 0.5, -1.0, "dir|0.5|-1"},
	}
	for _, tt := range tests {
		q, err := ParseQuery(tt.mode, tt.spindle, tt.point)
		if err != nil {
			t.Errorf("ParseQuery(%q, %#v, %#v): %v", tt.mode, tt.spindle, tt.point, err)
			continue
		}
		got := string(q.Mode) + "|"
		if q.Address != nil {
			got += q.Address.String()
		}
		got += "|"
		if q.Pscale != nil {
			got += strconv.Itoa(*q.Pscale)
		}
		if got != tt.want {
			t.Errorf("ParseQuery(%q, %#v, %#v) = %s, want %s", tt.mode, tt.spindle, tt.point, got, tt.want)
		}
	}
}

func TestParseQueryRefusesWithTheFieldAndTheFix(t *testing.T) {
	tests := []struct {
		mode           string
		spindle, point any
		want           string
	}{
		{"spin", "0.1", nil, `mode "spin": want one of`},
		{"", "0.x", nil, `spindle: address "0.x": 'x' is not a digit or a dot`},
		{"", "0.1", "-1.5", `point: pscale "-1.5": not a whole number`},
		{"", "0.1", true, "point: pscale true: not a whole number"},
		{"", "0.7*1", nil, `spindle "0.7*1": a node's references are the entries at its digit 0, so walk through it: spindle 0.7.0.1`},
		{"", "*1", nil, `spindle "*1": * goes at the end of the address whose references to list, e.g. 0.7*`},
		{"", "0.7**", nil, `spindle "0.7**": one * at most, at the end`},
		{"dir", "0.7*", nil, `spindle "0.7*": a trailing * asks for star mode, but mode is dir`},
		{"", "*", nil, `star mode needs a spindle`},
		{"ring", "0.1", -1, `ring mode takes no point`},
	}
	for _, tt := range tests {
		_, err := ParseQuery(tt.mode, tt.spindle, tt.point)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseQuery(%q, %#v, %#v) = %v, want %q", tt.mode, tt.spindle, tt.point, err, tt.want)
		}
	}
}

// Each mode reads what it needs and refuses what it would ignore; with no
// mode, what is given decides, as in the reference walker.
func TestBSPModeNeedsItsPartsAndRefusesOthers(t *testing.T) {
	b := mustParse(t, purposeJSON)
	a, p := mustAddr(t, "0.2"), -1
	// Per mode: the answer's mode, or the error, for (nothing, address,
	// point, address and point).
	tests := map[Mode][4]string{
		"":          {"block", "spindle", "disc", "point"},
		ModeBlock:   {"block", "block mode reads the whole tree", "block mode takes no point", "block mode reads the whole tree"},
		ModeSpindle: {"spindle mode needs a spindle", "spindle", "spindle mode needs a spindle", "spindle mode takes no point"},
		ModePoint:   {"point mode needs a spindle", "point mode needs a point", "point mode needs a spindle", "point"},
		ModeRing:    {"ring mode needs a spindle", "ring", "ring mode needs a spindle", "ring mode takes no point"},
		ModeDir:     {"dir mode needs a spindle", "dir", "dir mode needs a spindle", "dir"},
		ModeDisc:    {"disc mode needs a point", "disc mode needs a point", "disc", "disc mode reads the whole block"},
		ModeStar:    {"star mode needs a spindle", "star", "star mode needs a spindle", "star mode takes no point"},
	}
	if len(tests) != len(Modes)+1 {
		t.Fatalf("the table covers %d modes, there are %d", len(tests)-1, len(Modes))
	}
	for mode, want := range tests {
		for i, q := range []Query{{}, {Address: &a}, {Pscale: &p}, {Address: &a, Pscale: &p}} {
			q.Mode = mode
			r, err := BSP(b, q)
			got := string(r.Mode)
			if err != nil {
				got = err.Error()
			}
			if !strings.HasPrefix(got, want[i]) {
				t.Errorf("mode %q, query %d: got %q, want %q", mode, i, got, want[i])
			}
		}
	}
}
