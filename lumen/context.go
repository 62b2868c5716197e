package lumen

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/lumen/memory"
	"github.com/llmkernels/kernels/lumen/skill"
)

// snapshot is the state a step loads: soul, values, goals.
type snapshot struct {
	soul   string
	values []Value
	goals  []GoalRecord
}

func (in *Instance) snapshot() (*snapshot, error) {
	soul, err := in.Soul()
	if err != nil {
		return nil, err
	}
	values, err := in.Values()
	if err != nil {
		return nil, err
	}
	goals, err := in.Goals()
	if err != nil {
		return nil, err
	}
	return &snapshot{soul: soul, values: values, goals: goals}, nil
}

// vars are the template variables every step gets.
func (s *snapshot) vars(now time.Time) map[string]string {
	return map[string]string{
		"now":    now.UTC().Format(time.RFC3339),
		"soul":   formatSoul(s.soul),
		"values": formatValues(s.values),
		"goals":  formatGoals(s.goals),
	}
}

// loaded describes what a step loaded, for its kernel memory.
func (s *snapshot) loaded(memories int) map[string]any {
	return map[string]any{"soul_chars": len(s.soul), "values": len(s.values), "goals": len(s.goals), "memories": memories}
}

func formatSoul(text string) string {
	if strings.TrimSpace(text) == "" {
		return "(soul.md is empty: you have not yet written who you are; only reflection writes it)"
	}
	return strings.TrimSpace(text)
}

func formatValues(vs []Value) string {
	if len(vs) == 0 {
		return "(no values yet; only reflection sets them)"
	}
	sorted := append([]Value(nil), vs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Weight > sorted[j].Weight })
	var b strings.Builder
	for _, v := range sorted {
		fmt.Fprintf(&b, "- %s (weight %.2f, %s)\n", v.Name, v.Weight, v.Status)
	}
	return strings.TrimRight(b.String(), "\n")
}

func formatGoals(gs []GoalRecord) string {
	if len(gs) == 0 {
		return "(no goals yet; only reflection creates them)"
	}
	sorted := append([]GoalRecord(nil), gs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Weight > sorted[j].Weight })
	var b strings.Builder
	for _, g := range sorted {
		fmt.Fprintf(&b, "- %s (weight %.2f, %s, %d)\n", g.Name, g.Weight, g.Status, g.Year)
	}
	return strings.TrimRight(b.String(), "\n")
}

func formatMemories(es []memory.Entry) string {
	if len(es) == 0 {
		return "(no memories yet)"
	}
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "- [%s] %s (weight %.2f)", e.Timestamp.UTC().Format("2006-01-02 15:04 UTC"), e.Author, e.Current)
		if e.Situation != "" {
			fmt.Fprintf(&b, " %s —", e.Situation)
		}
		fmt.Fprintf(&b, " %s\n", clip.Line(e.Description, 600))
	}
	return strings.TrimRight(b.String(), "\n")
}

// skillContext describes every available skill by its --help (cached),
// and the built-in create-skill.
func (in *Instance) skillContext(ctx context.Context) (string, error) {
	list, err := in.skills.List()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, s := range list {
		if !s.HasMain {
			fmt.Fprintf(&b, "### %s\n(not available: no main.py)\n\n", s.Name)
			continue
		}
		help, err := in.skills.Help(ctx, s.Name)
		if err != nil {
			fmt.Fprintf(&b, "### %s\n(not usable: %v)\n\n", s.Name, err)
			continue
		}
		fmt.Fprintf(&b, "### %s\n%s\n\n", s.Name, help)
	}
	fmt.Fprintf(&b, "### %s (built into the kernel)\nAuthor a new skill: a directory skills/<name>/ with main.py that implements --help and the stdin/stdout protocol. Use it when no skill can do what is needed.\n", skill.BuiltinCreate)
	return b.String(), nil
}

func formatCandidates(cs []Candidate) string {
	var b strings.Builder
	for i, c := range cs {
		fmt.Fprintf(&b, "%d. %s\n   skill: %s\n   input: %s\n   predicted outcome: %s\n   counterfactual: %s\n",
			i+1, c.Action, c.Skill, compactJSON(c.Input), c.Predicted, c.Counterfactual)
	}
	return strings.TrimRight(b.String(), "\n")
}

func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	out, _ := json.Marshal(v)
	return string(out)
}
