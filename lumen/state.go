package lumen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/llmkernels/kernels/internal/atomicfile"
)

// Value is one entry of data/values.json (a JSON array of them).
type Value struct {
	Name   string  `json:"name"`
	Weight float64 `json:"weight"`
	Status string  `json:"status"` // active | deprecated
}

// Goal is one entry of data/goals/[year].json (a JSON array of them).
type Goal struct {
	Name   string  `json:"name"`
	Weight float64 `json:"weight"`
	Status string  `json:"status"` // todo | working | done | perpetual
}

// GoalRecord is a goal with the year file it lives in.
type GoalRecord struct {
	Goal
	Year int `json:"year"`
}

// Statuses.
const (
	ValueActive     = "active"
	ValueDeprecated = "deprecated"
	GoalTodo        = "todo"
	GoalWorking     = "working"
	GoalDone        = "done"
	GoalPerpetual   = "perpetual"
)

func validGoalStatus(s string) bool {
	switch s {
	case GoalTodo, GoalWorking, GoalDone, GoalPerpetual:
		return true
	}
	return false
}

// Values reads data/values.json.
func (in *Instance) Values() ([]Value, error) {
	data, err := os.ReadFile(in.valuesPath())
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	var vs []Value
	if len(bytes.TrimSpace(data)) == 0 {
		return vs, nil
	}
	if err := json.Unmarshal(data, &vs); err != nil {
		return nil, fmt.Errorf("values: %s is not a JSON array of {name, weight, status}: %w; fix it by hand or restore it with git", in.valuesPath(), err)
	}
	for _, v := range vs {
		if v.Weight < 0 || v.Weight > 1 || (v.Status != ValueActive && v.Status != ValueDeprecated) {
			return nil, fmt.Errorf("values: %s: value %q has weight %v and status %q; weights are 0..1 and statuses active or deprecated", in.valuesPath(), v.Name, v.Weight, v.Status)
		}
	}
	return vs, nil
}

// activeValues are the active values, heaviest first.
func activeValues(vs []Value) []Value {
	var out []Value
	for _, v := range vs {
		if v.Status == ValueActive {
			out = append(out, v)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Weight > out[j].Weight })
	return out
}

func (in *Instance) writeValues(vs []Value) error {
	if vs == nil {
		vs = []Value{}
	}
	data, err := json.MarshalIndent(vs, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(in.valuesPath(), append(data, '\n'), 0o644)
}

var goalFile = regexp.MustCompile(`^(\d{4})\.json$`)

// Goals reads every year file under data/goals/, oldest year first.
func (in *Instance) Goals() ([]GoalRecord, error) {
	entries, err := os.ReadDir(in.goalsDir())
	if err != nil {
		return nil, fmt.Errorf("goals: %w", err)
	}
	var out []GoalRecord
	for _, e := range entries {
		m := goalFile.FindStringSubmatch(e.Name())
		if m == nil || e.IsDir() {
			continue
		}
		year, _ := strconv.Atoi(m[1])
		gs, err := in.readGoalYear(year)
		if err != nil {
			return nil, err
		}
		for _, g := range gs {
			out = append(out, GoalRecord{Goal: g, Year: year})
		}
	}
	return out, nil
}

func (in *Instance) goalPath(year int) string {
	return filepath.Join(in.goalsDir(), fmt.Sprintf("%04d.json", year))
}

func (in *Instance) readGoalYear(year int) ([]Goal, error) {
	path := in.goalPath(year)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("goals: %w", err)
	}
	var gs []Goal
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(data, &gs); err != nil {
		return nil, fmt.Errorf("goals: %s is not a JSON array of {name, weight, status}: %w; fix it by hand or restore it with git", path, err)
	}
	for _, g := range gs {
		if g.Weight < 0 || g.Weight > 1 || !validGoalStatus(g.Status) {
			return nil, fmt.Errorf("goals: %s: goal %q has weight %v and status %q; weights are 0..1 and statuses todo, working, done or perpetual", path, g.Name, g.Weight, g.Status)
		}
	}
	return gs, nil
}

func (in *Instance) writeGoalYear(year int, gs []Goal) error {
	if gs == nil {
		gs = []Goal{}
	}
	data, err := json.MarshalIndent(gs, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(in.goalPath(year), append(data, '\n'), 0o644)
}

// findGoal looks a goal up by name, ignoring case and surrounding space.
func findGoal(goals []GoalRecord, name string) (GoalRecord, bool) {
	for _, g := range goals {
		if sameName(g.Name, name) {
			return g, true
		}
	}
	return GoalRecord{}, false
}

func sameName(a, b string) bool {
	return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
}

// activeGoals are the goals not done, heaviest first.
func activeGoals(goals []GoalRecord) []GoalRecord {
	var out []GoalRecord
	for _, g := range goals {
		if g.Status != GoalDone {
			out = append(out, g)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Weight > out[j].Weight })
	return out
}

// Soul reads data/soul.md.
func (in *Instance) Soul() (string, error) {
	data, err := os.ReadFile(in.soulPath())
	if err != nil {
		return "", fmt.Errorf("soul: %w", err)
	}
	return string(data), nil
}

// SoulSummary is the name and ontology soul.md gives.
type SoulSummary struct {
	Name     string `json:"name"`
	Ontology string `json:"ontology"`
}

// summarizeSoul finds the name and ontology in soul.md: "Name: …" and
// "Ontology: …" lines (bold or not), or "## Name" / "## Ontology" sections
// (their first paragraph); a first "# Title" is the name when nothing else
// gives one.
func summarizeSoul(text string) SoulSummary {
	var s SoulSummary
	lines := strings.Split(text, "\n")
	section := ""
	title := ""
	for _, raw := range lines {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "#") {
			heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
			if strings.HasPrefix(line, "# ") && title == "" {
				title = heading
			}
			section = strings.ToLower(heading)
			continue
		}
		plain := strings.ReplaceAll(line, "*", "")
		if k, v, ok := strings.Cut(plain, ":"); ok {
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "name":
				if s.Name == "" {
					s.Name = strings.TrimSpace(v)
				}
				continue
			case "ontology":
				if s.Ontology == "" {
					s.Ontology = strings.TrimSpace(v)
				}
				continue
			}
		}
		if line == "" {
			continue
		}
		switch section {
		case "name":
			if s.Name == "" {
				s.Name = line
			}
		case "ontology":
			if s.Ontology == "" {
				s.Ontology = line
			}
		}
	}
	if s.Name == "" {
		s.Name = title
	}
	return s
}

// lockState serialises read-modify-write of values, goals and soul across
// processes; the writes themselves are atomic renames.
func (in *Instance) lockState() (func(), error) {
	if err := os.MkdirAll(in.derivedDir(), 0o755); err != nil {
		return nil, err
	}
	return atomicfile.Lock(filepath.Join(in.derivedDir(), "state.lock"))
}
