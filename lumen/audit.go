package lumen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/lumen/memory"
)

// AuditChange is a change to values.json or soul.md found by the audit.
type AuditChange struct {
	When        time.Time `json:"when"`
	MemoryID    string    `json:"memory_id,omitempty"` // the kernel memory logging it; "" for drift found in the files
	File        string    `json:"file"`
	What        string    `json:"what"`
	ExplainedBy string    `json:"explained_by,omitempty"` // the self memory explaining it
	Problem     string    `json:"problem,omitempty"`
}

// DeltaDay is the prediction deltas of one day.
type DeltaDay struct {
	Day  string  `json:"day"`
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
}

// AuditReport answers two of the spec's Phase 2 questions from the data:
// are value and soul changes explained, and does the world model improve.
type AuditReport struct {
	Changes     []AuditChange `json:"changes"`
	Unexplained []AuditChange `json:"unexplained"`
	Deltas      []float64     `json:"deltas"` // every recorded prediction delta, oldest first
	ByDay       []DeltaDay    `json:"by_day"`
	Slope       float64       `json:"slope"` // least-squares change of delta per action
	FirstHalf   float64       `json:"first_half_mean"`
	SecondHalf  float64       `json:"second_half_mean"`
}

// Audit checks that every value or soul change the kernel logged has a
// self-authored memory explaining it, that values.json and soul.md hold
// what the logged changes add up to (anything else changed outside the
// kernel, unexplained), and reports predicted-vs-actual deltas over time.
func (in *Instance) Audit(ctx context.Context) (*AuditReport, error) {
	rep := &AuditReport{}
	logged, err := in.mem.List(ctx, memory.Filter{Authors: []string{memory.Kernel}, Step: "evolve"})
	if err != nil {
		return nil, err
	}
	expectValues := map[string]json.RawMessage{}
	var expectSoul string
	lastLogged := map[string]time.Time{}
	for _, e := range logged {
		var d struct {
			File        string          `json:"file"`
			Change      Change          `json:"change"`
			Before      json.RawMessage `json:"before"`
			After       json.RawMessage `json:"after"`
			ExplainedBy string          `json:"explained_by"`
		}
		if json.Unmarshal(e.Data, &d) != nil || (d.File != "data/values.json" && d.File != "data/soul.md") {
			continue
		}
		c := AuditChange{When: e.Timestamp, MemoryID: e.ID, File: d.File, What: d.Change.String(), ExplainedBy: d.ExplainedBy}
		var damaged string
		if d.File == "data/values.json" {
			c.What = fmt.Sprintf("%s (%s → %s)", d.Change, clip.Line(string(d.Before), 120), clip.Line(string(d.After), 120))
			expectValues[strings.ToLower(d.Change.Name)] = d.After
		} else if err := json.Unmarshal(d.After, &expectSoul); err != nil {
			// A hand-edited record: soul.md is then compared with the
			// last text logged intact, and this change is listed.
			damaged = fmt.Sprintf("the logged soul.md text is damaged (%v)", err)
		}
		lastLogged[d.File] = e.Timestamp
		switch self, err := in.mem.Get(ctx, d.ExplainedBy); {
		case err != nil:
			return nil, err
		case d.ExplainedBy == "" || len(self) == 0:
			c.Problem = "no self-authored memory explains it"
		case self[0].Author != memory.Self:
			c.Problem = fmt.Sprintf("the memory %s it points to is by %s, not self", d.ExplainedBy, self[0].Author)
		}
		if damaged != "" {
			c.Problem = strings.TrimPrefix(c.Problem+"; "+damaged, "; ")
		}
		rep.Changes = append(rep.Changes, c)
		if c.Problem != "" {
			rep.Unexplained = append(rep.Unexplained, c)
		}
	}
	drift, err := in.drift(expectValues, expectSoul, lastLogged)
	if err != nil {
		return nil, err
	}
	rep.Unexplained = append(rep.Unexplained, drift...)

	records, err := in.mem.List(ctx, memory.Filter{Authors: []string{memory.Kernel}, Step: "record"})
	if err != nil {
		return nil, err
	}
	days := map[string]*DeltaDay{}
	for _, e := range records {
		var d struct {
			Delta *float64 `json:"delta"`
		}
		if json.Unmarshal(e.Data, &d) != nil || d.Delta == nil {
			continue
		}
		rep.Deltas = append(rep.Deltas, *d.Delta)
		day := memory.Day(e.Timestamp)
		if days[day] == nil {
			days[day] = &DeltaDay{Day: day}
			rep.ByDay = append(rep.ByDay, DeltaDay{Day: day})
		}
		days[day].N++
		days[day].Mean += *d.Delta
	}
	for i := range rep.ByDay {
		d := days[rep.ByDay[i].Day]
		rep.ByDay[i] = DeltaDay{Day: d.Day, N: d.N, Mean: d.Mean / float64(d.N)}
	}
	sort.Slice(rep.ByDay, func(i, j int) bool { return rep.ByDay[i].Day < rep.ByDay[j].Day })
	rep.Slope, rep.FirstHalf, rep.SecondHalf = trend(rep.Deltas)
	return rep, nil
}

// drift compares the files with the state the logged changes add up to.
func (in *Instance) drift(expectValues map[string]json.RawMessage, expectSoul string, lastLogged map[string]time.Time) ([]AuditChange, error) {
	values, err := in.Values()
	if err != nil {
		return nil, err
	}
	current := map[string]json.RawMessage{}
	names := map[string]string{}
	for _, v := range values {
		key := strings.ToLower(v.Name)
		current[key] = jsonOf(v)
		names[key] = v.Name
	}
	for key := range expectValues {
		if _, ok := names[key]; !ok {
			names[key] = key
		}
	}
	keys := slices.Sorted(maps.Keys(names))
	since := func(file string) string {
		if t, ok := lastLogged[file]; ok {
			return "since the last logged change at " + t.UTC().Format(time.RFC3339)
		}
		return "and no change to it was ever logged"
	}
	var out []AuditChange
	for _, k := range keys {
		want, got := expectValues[k], current[k]
		if isNull(want) && isNull(got) {
			continue
		}
		if !isNull(want) && !isNull(got) && sameJSON(want, got) {
			continue
		}
		out = append(out, AuditChange{File: "data/values.json",
			What:    fmt.Sprintf("value %q is %s; the logged changes leave it %s", names[k], orAbsent(got), orAbsent(want)),
			Problem: "changed outside the kernel " + since("data/values.json") + ": no self-authored memory explains it"})
	}
	soul, err := in.Soul()
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(soul) != strings.TrimSpace(expectSoul) {
		out = append(out, AuditChange{File: "data/soul.md",
			What:    fmt.Sprintf("soul.md holds %d characters that differ from the %d the logged changes leave", len(strings.TrimSpace(soul)), len(strings.TrimSpace(expectSoul))),
			Problem: "changed outside the kernel " + since("data/soul.md") + ": no self-authored memory explains it"})
	}
	return out, nil
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

func orAbsent(raw json.RawMessage) string {
	if isNull(raw) {
		return "absent"
	}
	return string(raw)
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y Value
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return x == y
}

// trend is the least-squares slope of the deltas against their order, and
// the means of their first and second halves.
func trend(ds []float64) (slope, first, second float64) {
	n := len(ds)
	if n == 0 {
		return 0, 0, 0
	}
	var sx, sy, sxy, sxx float64
	for i, d := range ds {
		x := float64(i)
		sx += x
		sy += d
		sxy += x * d
		sxx += x * x
	}
	if den := float64(n)*sxx - sx*sx; den != 0 {
		slope = (float64(n)*sxy - sx*sy) / den
	}
	half := n / 2
	if half == 0 {
		return slope, ds[0], ds[0]
	}
	for _, d := range ds[:half] {
		first += d
	}
	for _, d := range ds[half:] {
		second += d
	}
	return slope, first / float64(half), second / float64(n-half)
}

// Text renders the audit for the terminal.
func (r *AuditReport) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Value and soul changes: %d logged by the kernel", len(r.Changes))
	if len(r.Unexplained) == 0 {
		b.WriteString("; every one is explained by a self-authored memory, and the files match them.\n")
	} else {
		fmt.Fprintf(&b, "; %d without a self-authored explanation:\n", len(r.Unexplained))
		for _, c := range r.Unexplained {
			where := c.File
			if c.MemoryID != "" {
				where += " (kernel memory " + c.MemoryID + ")"
			}
			fmt.Fprintf(&b, "  - %s: %s: %s\n", where, c.What, c.Problem)
		}
	}
	for _, c := range r.Changes {
		if c.Problem == "" {
			fmt.Fprintf(&b, "  ok %s %s: %s (explained by %s)\n", c.When.UTC().Format("2006-01-02 15:04"), c.File, c.What, c.ExplainedBy)
		}
	}
	fmt.Fprintf(&b, "\nPredicted vs actual outcome deltas: %d actions recorded\n", len(r.Deltas))
	if len(r.Deltas) == 0 {
		return b.String()
	}
	for _, d := range r.ByDay {
		fmt.Fprintf(&b, "  %s  %3d actions  mean delta %.2f\n", d.Day, d.N, d.Mean)
	}
	reading := "flat"
	switch {
	case len(r.Deltas) < 4:
		reading = "too few actions to tell"
	case r.Slope < -0.005:
		reading = "shrinking: the world model is improving"
	case r.Slope > 0.005:
		reading = "growing: predictions are getting worse"
	}
	fmt.Fprintf(&b, "  trend %+.3f per action; first half mean %.2f, second half %.2f: %s\n", r.Slope, r.FirstHalf, r.SecondHalf, reading)
	return b.String()
}
