package lumen

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/internal/proc"
	"github.com/llmkernels/kernels/llm"

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
	// Index says where the memory index lives: "on disk", or "in memory"
	// (a read-only instance whose index was missing or stale).
	Index  string        `json:"index"`
	Skills []SkillStatus `json:"skills"`
	// LastReflection is the latest reflection and what triggered it; nil
	// when the agent never reflected.
	LastReflection *ReflectionMark `json:"last_reflection"`
	// StaleGoals are the todo or working goals idle for at least
	// StaleAfter action cycles.
	StaleGoals []IdleGoal `json:"stale_goals"`
	// Failures are the failed steps and cycles of the last seven days,
	// newest first (at most ten).
	Failures []Failure `json:"recent_failures"`
	// SpentToday is the LLM spend recorded in memory today (UTC), in US
	// dollars, by every process.
	SpentToday float64 `json:"spent_today_usd"`
	// UsageToday is what those calls add up to: tokens, and how many of
	// the input tokens were read from the prompt cache.
	UsageToday Usage `json:"usage_today"`
	// ScriptedModels are the models today's scripted spend
	// (UsageToday.ScriptedUSD) was metered at.
	ScriptedModels []string `json:"scripted_models,omitempty"`
	StaleAfter     int      `json:"stale_after_cycles"`
	// Confinement is how skills run: confined (with what), refused (not
	// available here), or unconfined (--unconfined).
	Confinement string `json:"confinement"`
}

// ReflectionMark is one reflection, as its REVIEW memory records it.
type ReflectionMark struct {
	When     time.Time `json:"when"`
	MemoryID string    `json:"memory_id"`
	Fired    []Fired   `json:"fired"`
}

// Failure is a failed step or cycle.
type Failure struct {
	When     time.Time `json:"when"`
	MemoryID string    `json:"memory_id"`
	Step     string    `json:"step"`
	Error    string    `json:"error"`
}

// SkillStatus is a skill and what the kernel knows of its current version.
type SkillStatus struct {
	skill.Check
	HasMain bool `json:"has_main"`
	Kept    int  `json:"kept_versions"`
	// Network is what the skill declares it needs to reach (skill.json);
	// NetworkAllowed what of it the person allowed.
	Network        []string `json:"network,omitempty"`
	NetworkAllowed []string `json:"network_allowed,omitempty"`
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
	skills, err := in.SkillStatuses()
	if err != nil {
		return nil, err
	}
	st := &Status{Root: in.Root, Soul: summarizeSoul(snap.soul), SoulEmpty: strings.TrimSpace(snap.soul) == "",
		Values: activeValues(snap.values), Goals: activeGoals(snap.goals), Memories: counts,
		Retrieval: in.mem.Mode(), Index: "on disk", Skills: skills, StaleAfter: in.opts.StaleAfter,
		Confinement: proc.Describe(in.opts.Unconfined, in.opts.SkillLimits),
		StaleGoals:  []IdleGoal{}, Failures: []Failure{}} // lists are empty, not null, in --json
	if st.Values == nil {
		st.Values = []Value{}
	}
	if st.Goals == nil {
		st.Goals = []GoalRecord{}
	}
	if st.Skills == nil {
		st.Skills = []SkillStatus{}
	}
	if in.mem.InMemory() {
		st.Index = "in memory (the on-disk index is missing or stale and cannot be written here)"
	}
	if len(st.Values) > topValues {
		st.Values = st.Values[:topValues]
	}
	last, err := in.mem.List(ctx, memory.Filter{Authors: []string{memory.Kernel}, Step: stepReview, Limit: 1})
	if err != nil {
		return nil, err
	}
	var lastReview int64
	if len(last) == 1 {
		var d struct {
			Fired []Fired `json:"fired"`
		}
		if err := json.Unmarshal(last[0].Data, &d); err != nil {
			d.Fired = nil // a hand-edited memory: shown without its triggers
		}
		st.LastReflection = &ReflectionMark{When: last[0].Timestamp, MemoryID: last[0].ID, Fired: d.Fired}
		lastReview = last[0].Seq
	}
	idle, err := in.idleGoals(ctx, lastReview)
	if err != nil {
		return nil, err
	}
	for _, g := range idle {
		if g.Cycles >= in.opts.StaleAfter {
			st.StaleGoals = append(st.StaleGoals, g)
		}
	}
	now := in.opts.Now()
	failed, err := in.mem.List(ctx, memory.Filter{Authors: []string{memory.Kernel}, SinceDay: memory.Day(now.AddDate(0, 0, -7)), DataHas: "error"})
	if err != nil {
		return nil, err
	}
	for i := len(failed) - 1; i >= 0 && len(st.Failures) < 10; i-- {
		e := failed[i]
		var d struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(e.Data, &d) == nil && d.Error != "" {
			st.Failures = append(st.Failures, Failure{When: e.Timestamp, MemoryID: e.ID, Step: e.Step, Error: d.Error})
		}
	}
	if st.SpentToday, err = in.mem.Spend(ctx, memory.Day(now)); err != nil {
		return nil, err
	}
	if st.UsageToday, err = in.mem.DayUsage(ctx, memory.Day(now)); err != nil {
		return nil, err
	}
	if st.UsageToday.ScriptedUSD > 0 {
		if st.ScriptedModels, err = in.mem.ScriptedModels(ctx, memory.Day(now)); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// SkillStatuses lists every skill with what is known of its current
// version, without running anything.
func (in *Instance) SkillStatuses() ([]SkillStatus, error) {
	list, err := in.skills.List()
	if err != nil {
		return nil, err
	}
	var out []SkillStatus
	for _, s := range list {
		c, err := in.skills.Cached(s.Name)
		if err != nil {
			return nil, err
		}
		var kept []skill.Kept
		if skill.ValidName(s.Name) == nil { // a directory no skill may be named has no history
			if kept, err = in.skills.History(s.Name); err != nil {
				return nil, err
			}
		}
		st := SkillStatus{Check: c, HasMain: s.HasMain, Kept: len(kept)}
		if skill.ValidName(s.Name) == nil {
			// A skill.json that cannot be read says so when the skill runs.
			st.Network, st.NetworkAllowed, _ = in.skills.Network(s.Name)
		}
		out = append(out, st)
	}
	return out, nil
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
	var rows []string
	for _, v := range s.Values {
		rows = append(rows, fmt.Sprintf("%.2f  %s", v.Weight, v.Name))
	}
	section(&b, "values", "(no active values)", rows)
	rows = nil
	for _, g := range s.Goals {
		rows = append(rows, fmt.Sprintf("%.2f  %-9s %s", g.Weight, g.Status, g.Name))
	}
	section(&b, "goals", "(no active goals)", rows)
	rows = nil
	for _, g := range s.StaleGoals {
		rows = append(rows, fmt.Sprintf("%s: idle %d action cycles (stale after %d)", g.Name, g.Cycles, s.StaleAfter))
	}
	if len(rows) > 0 {
		section(&b, "stale", "", rows)
	}
	b.WriteString("reflected ")
	if r := s.LastReflection; r == nil {
		b.WriteString("never\n")
	} else {
		var why []string
		for _, f := range r.Fired {
			why = append(why, f.String())
		}
		fmt.Fprintf(&b, "%s (%s) because: %s\n", r.When.UTC().Format("2006-01-02 15:04 UTC"), r.MemoryID, orDash(strings.Join(why, "; ")))
	}
	total := 0
	for _, n := range s.Memories {
		total += n
	}
	fmt.Fprintf(&b, "memories  %d: self %d, goal %d, external %d, kernel %d\n", total,
		s.Memories[memory.Self], s.Memories[memory.Goal], s.Memories[memory.External], s.Memories[memory.Kernel])
	fmt.Fprintf(&b, "retrieval %s; index %s\n", s.Retrieval, s.Index)
	fmt.Fprintf(&b, "spent     $%.4f today (UTC, recorded in memory)", s.SpentToday)
	if u := s.UsageToday; u.Calls > 0 {
		fmt.Fprintf(&b, ": %d calls, %s", u.Calls, cacheShare(u))
	}
	if u := s.UsageToday; u.ScriptedUSD > 0 {
		fmt.Fprintf(&b, "; of it, $%.4f %s", u.ScriptedUSD, llm.ScriptedNote(s.ScriptedModels...))
	}
	b.WriteString("\n")
	rows = nil
	for _, f := range s.Failures {
		rows = append(rows, fmt.Sprintf("%s %s: %s", f.When.UTC().Format("01-02 15:04"), f.Step, clip.Line(f.Error, 160)))
	}
	section(&b, "failures", "none in the last 7 days", rows)
	var names []string
	for _, sk := range s.Skills {
		switch {
		case !sk.HasMain:
			names = append(names, sk.Name+" (no main.py)")
		case sk.Checked && !sk.OK:
			names = append(names, sk.Name+" (--help failed)")
		case !sk.Checked:
			names = append(names, sk.Name+" (--help not checked yet)")
		default:
			names = append(names, sk.Name)
		}
	}
	fmt.Fprintf(&b, "skills    %s\n", orDash(strings.Join(names, ", ")))
	fmt.Fprintf(&b, "confined  %s\n", s.Confinement)
	return b.String()
}

// section writes rows under a label in the status layout, or none when
// there are no rows.
func section(b *strings.Builder, label, none string, rows []string) {
	if len(rows) == 0 {
		rows = []string{none}
	}
	for i, r := range rows {
		if i == 0 {
			fmt.Fprintf(b, "%-10s%s\n", label, r)
		} else {
			fmt.Fprintf(b, "%-10s%s\n", "", r)
		}
	}
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

// MemoryEntry is a memory as the index knows it: its line (id, time,
// author, weight, situation, description and what the kernel records
// with them) and its weights now.
type MemoryEntry = memory.Entry

// ScoredMemory is a memory search found, with its score and the
// normalised recency, importance and relevance that make it up.
type ScoredMemory = memory.Scored

// Scoring weighs recency, importance and relevance in a memory's score.
type Scoring = memory.Scoring

// SearchResult is what Search found: how relevance was ranked, the
// weights of the score, and the memories, best first.
type SearchResult struct {
	Mode     string         `json:"mode"`
	Scoring  Scoring        `json:"scoring"`
	Relevant []ScoredMemory `json:"results"`
}

// Memories lists memories, oldest first: the last 20 unless q.All.
func (in *Instance) Memories(ctx context.Context, q MemoryQuery) ([]MemoryEntry, error) {
	f := memory.Filter{Limit: 20}
	if q.All {
		f.Limit = 0
	}
	if q.Author != "" {
		if !memory.ValidAuthor(q.Author) {
			return nil, option.Errorf("author", "%q: use self, kernel, goal or external", q.Author)
		}
		f.Authors = []string{q.Author}
	}
	if q.Date != "" {
		if _, err := time.Parse(time.DateOnly, q.Date); err != nil {
			return nil, option.Errorf("date", "%q: use YYYY-MM-DD, e.g. 2026-02-14", q.Date)
		}
		f.Day = q.Date
	}
	return in.mem.List(ctx, f)
}

// MemoryText renders memories for the terminal, one per line: id, UTC
// time, author, current weight, [step], situation — description.
func MemoryText(es []MemoryEntry) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString(memoryLine(e) + "\n")
	}
	return b.String()
}

func memoryLine(e MemoryEntry) string {
	step := ""
	if e.Step != "" {
		step = "[" + e.Step + "] "
	}
	sit := ""
	if e.Situation != "" {
		sit = e.Situation + " — "
	}
	return fmt.Sprintf("%s  %s  %-8s %.2f  %s%s%s", e.ID, e.Timestamp.UTC().Format("2006-01-02 15:04:05"), e.Author, e.Current, step, sit, strings.Join(strings.Fields(e.Description), " "))
}

// Search ranks memories for query the way the loops retrieve them (recency,
// importance and relevance, each normalised, summed with weights), best
// first: at most limit (0: as many as a step loads, Options.TopK), of these
// authors (all when empty).
func (in *Instance) Search(ctx context.Context, query string, authors []string, limit int) (*SearchResult, error) {
	if strings.TrimSpace(query) == "" {
		return nil, option.Errorf("query", "is empty: give what to search for, e.g. \"my sister\"")
	}
	for _, a := range authors {
		if !memory.ValidAuthor(a) {
			return nil, option.Errorf("author", "%q: use self, kernel, goal or external", a)
		}
	}
	if limit < 0 {
		return nil, option.Errorf("limit", "%d: give how many memories, or 0 for as many as a step loads (%d)", limit, in.opts.TopK)
	}
	if limit == 0 {
		limit = in.opts.TopK
	}
	r, err := in.mem.Retrieve(ctx, memory.Query{Text: query, TopK: limit, Authors: authors, Now: in.opts.Now()})
	if err != nil {
		return nil, err
	}
	res := &SearchResult{Mode: r.Mode, Scoring: in.mem.Scoring(), Relevant: r.Relevant}
	if res.Relevant == nil {
		res.Relevant = []ScoredMemory{} // none is an empty list, not null, in --json
	}
	return res, nil
}

// SearchText renders search results, best first, with their scores.
func SearchText(r *SearchResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d memories by %s; score = %.1f×recency + %.1f×importance + %.1f×relevance, each normalised over the candidates\n",
		len(r.Relevant), r.Mode, r.Scoring.Recency, r.Scoring.Importance, r.Scoring.Relevance)
	for _, s := range r.Relevant {
		fmt.Fprintf(&b, "%.2f (rec %.2f imp %.2f rel %.2f)  %s\n", s.Score, s.Recency, s.Importance, s.Relevance, memoryLine(s.Entry))
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
		return nil, option.Errorf("status", "%q: use todo, working, done or perpetual", status)
	}
	if year < 0 {
		return nil, option.Errorf("year", "%d: give a year such as 2026, or 0 for every year", year)
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

// AllowSkillNetwork records that the person allows a skill to reach the
// network its skill.json declares (lumen skills allow NAME --network),
// logged as a kernel memory.
func (in *Instance) AllowSkillNetwork(name string) ([]string, error) {
	if err := in.writable(); err != nil {
		return nil, err
	}
	network, err := in.skills.AllowNetwork(name)
	if err != nil {
		return nil, err
	}
	_, err = in.remember(memory.Kernel, "allow", "lumen skills allow",
		fmt.Sprintf("ALLOW: skill %s may reach %s (allowed by the person)", name, strings.Join(network, ", ")),
		map[string]any{"skill": name, "network": network})
	return network, err
}

// KeptSkill is an earlier version of a skill, kept under
// skills/.history/NAME/: its version, when it was replaced, and where.
type KeptSkill = skill.Kept

// SkillVersion is a version of a skill made current: its version, the
// one it replaced (kept), and its --help.
type SkillVersion = skill.Created

// SkillHistory lists the kept earlier versions of a skill, oldest first.
func (in *Instance) SkillHistory(name string) ([]KeptSkill, error) {
	kept, err := in.skills.History(name)
	if kept == nil && err == nil {
		kept = []KeptSkill{} // none is an empty list, not null, in --json
	}
	return kept, err
}

// RestoreSkill makes a kept version of a skill current again (lumen skills
// restore), logged as a kernel memory.
func (in *Instance) RestoreSkill(ctx context.Context, name, version string) (*SkillVersion, error) {
	if err := in.writable(); err != nil {
		return nil, err
	}
	made, err := in.skills.Restore(ctx, name, version)
	if err != nil {
		return nil, err
	}
	_, err = in.remember(memory.Kernel, "restore", "lumen skills restore",
		fmt.Sprintf("RESTORE: skill %s is version %s again (version %s kept in skills/.history/%s/)", name, shortVersion(made.Version), shortVersion(made.Replaced), name),
		map[string]any{"skill": name, "version": made.Version, "replaced": made.Replaced, "help": made.Help})
	return made, err
}
