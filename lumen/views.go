package lumen

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/llmkernels/kernels/lumen/memory"
	"github.com/llmkernels/kernels/lumen/skill"
)

// Status is what lumen status shows.
type Status struct {
	Root      string         `json:"root"`
	Soul      SoulSummary    `json:"soul"`
	SoulEmpty bool           `json:"soul_empty"`
	Values    []Value        `json:"values"` // the top active values
	Goals     []GoalRecord   `json:"goals"`  // active goals (not done), heaviest first
	Memories  map[string]int `json:"memories"`
	Retrieval string         `json:"retrieval"`
	Skills    []skill.Skill  `json:"skills"`
}

// topValues is how many values status shows.
const topValues = 5

// Status gathers the instance's current state.
func (in *Instance) Status(ctx context.Context) (*Status, error) {
	snap, err := in.snapshot()
	if err != nil {
		return nil, err
	}
	counts, err := in.mem.CountByAuthor(ctx)
	if err != nil {
		return nil, err
	}
	skills, err := in.skills.List()
	if err != nil {
		return nil, err
	}
	st := &Status{Root: in.Root, Soul: summarizeSoul(snap.soul), SoulEmpty: strings.TrimSpace(snap.soul) == "",
		Values: activeValues(snap.values), Goals: activeGoals(snap.goals), Memories: counts,
		Retrieval: in.mem.Mode(), Skills: skills}
	if len(st.Values) > topValues {
		st.Values = st.Values[:topValues]
	}
	return st, nil
}

// Text renders the status for the terminal.
func (s *Status) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "instance  %s\n", s.Root)
	switch {
	case s.SoulEmpty:
		b.WriteString("soul      (soul.md is empty: reflection writes it)\n")
	default:
		fmt.Fprintf(&b, "soul      name: %s\n          ontology: %s\n", orDash(s.Soul.Name), orDash(s.Soul.Ontology))
	}
	b.WriteString("values    ")
	if len(s.Values) == 0 {
		b.WriteString("(no active values)\n")
	}
	for i, v := range s.Values {
		if i > 0 {
			b.WriteString("          ")
		}
		fmt.Fprintf(&b, "%.2f  %s\n", v.Weight, v.Name)
	}
	b.WriteString("goals     ")
	if len(s.Goals) == 0 {
		b.WriteString("(no active goals)\n")
	}
	for i, g := range s.Goals {
		if i > 0 {
			b.WriteString("          ")
		}
		fmt.Fprintf(&b, "%.2f  %-9s %s\n", g.Weight, g.Status, g.Name)
	}
	total := 0
	for _, n := range s.Memories {
		total += n
	}
	fmt.Fprintf(&b, "memories  %d: self %d, goal %d, external %d, kernel %d\n", total,
		s.Memories[memory.Self], s.Memories[memory.Goal], s.Memories[memory.External], s.Memories[memory.Kernel])
	fmt.Fprintf(&b, "retrieval %s\n", s.Retrieval)
	var names []string
	for _, sk := range s.Skills {
		if sk.HasMain {
			names = append(names, sk.Name)
		}
	}
	fmt.Fprintf(&b, "skills    %s\n", orDash(strings.Join(names, ", ")))
	return b.String()
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}

// MemoryQuery selects memories for lumen memory.
type MemoryQuery struct {
	Author string // self, kernel, goal or external; "" for all
	Date   string // YYYY-MM-DD (UTC); "" for any
	All    bool   // every match instead of the last 20
}

// Memories lists memories, oldest first: the last 20 unless q.All.
func (in *Instance) Memories(ctx context.Context, q MemoryQuery) ([]memory.Entry, error) {
	f := memory.Filter{Limit: 20}
	if q.All {
		f.Limit = 0
	}
	if q.Author != "" {
		if !memory.ValidAuthor(q.Author) {
			return nil, fmt.Errorf("--author %q: use self, kernel, goal or external", q.Author)
		}
		f.Authors = []string{q.Author}
	}
	if q.Date != "" {
		if _, err := time.Parse(time.DateOnly, q.Date); err != nil {
			return nil, fmt.Errorf("--date %q: use YYYY-MM-DD, e.g. 2026-02-14", q.Date)
		}
		f.Day = q.Date
	}
	return in.mem.List(ctx, f)
}

// MemoryText renders memories for the terminal, one per line.
func MemoryText(es []memory.Entry) string {
	var b strings.Builder
	for _, e := range es {
		step := ""
		if e.Step != "" {
			step = "[" + e.Step + "] "
		}
		sit := ""
		if e.Situation != "" {
			sit = e.Situation + " — "
		}
		fmt.Fprintf(&b, "%s  %-8s %.2f  %s%s%s\n", e.Timestamp.UTC().Format("2006-01-02 15:04:05"), e.Author, e.Current, step, sit, strings.Join(strings.Fields(e.Description), " "))
	}
	return b.String()
}

// SortedValues are all values, heaviest first (lumen values).
func (in *Instance) SortedValues() ([]Value, error) {
	vs, err := in.Values()
	if err != nil {
		return nil, err
	}
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].Weight > vs[j].Weight })
	return vs, nil
}

// FilteredGoals are the goals of a year and status ("" or 0 for any),
// heaviest first (lumen goals).
func (in *Instance) FilteredGoals(year int, status string) ([]GoalRecord, error) {
	if status != "" && !validGoalStatus(status) {
		return nil, fmt.Errorf("--status %q: use todo, working, done or perpetual", status)
	}
	gs, err := in.Goals()
	if err != nil {
		return nil, err
	}
	var out []GoalRecord
	for _, g := range gs {
		if (year == 0 || g.Year == year) && (status == "" || g.Status == status) {
			out = append(out, g)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Weight > out[j].Weight })
	return out, nil
}
