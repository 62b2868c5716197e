package lumen

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/lumen/memory"
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

// Empty state formats as "": what the LLM reads instead is in the
// templates ({{values|…}}). A name or situation is folded onto its line
// (oneLine): a goal the model named, or a person's message in a memory's
// situation, cannot add a line to the list.

func formatSoul(text string) string { return strings.TrimSpace(text) }

func formatValues(vs []Value) string {
	if len(vs) == 0 {
		return ""
	}
	sorted := append([]Value(nil), vs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Weight > sorted[j].Weight })
	var b strings.Builder
	for _, v := range sorted {
		fmt.Fprintf(&b, "- %s (weight %.2f, %s)\n", oneLine(v.Name), v.Weight, v.Status)
	}
	return strings.TrimRight(b.String(), "\n")
}

func formatGoals(gs []GoalRecord) string {
	if len(gs) == 0 {
		return ""
	}
	sorted := append([]GoalRecord(nil), gs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Weight > sorted[j].Weight })
	var b strings.Builder
	for _, g := range sorted {
		fmt.Fprintf(&b, "- %s (weight %.2f, %s, %d)\n", oneLine(g.Name), g.Weight, g.Status, g.Year)
	}
	return strings.TrimRight(b.String(), "\n")
}

func formatMemories(es []memory.Entry) string {
	if len(es) == 0 {
		return ""
	}
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "- [%s] %s (weight %.2f)", e.Timestamp.UTC().Format("2006-01-02 15:04 UTC"), e.Author, e.Current)
		if e.Situation != "" {
			fmt.Fprintf(&b, " %s —", oneLine(e.Situation))
		}
		fmt.Fprintf(&b, " %s\n", clip.Line(e.Description, 600))
	}
	return strings.TrimRight(b.String(), "\n")
}

// readySkill is a skill whose --help passed, or an MCP tool, as a step
// is told of it.
type readySkill struct{ name, help string }

// skillSet is what a step is told of the skills.
type skillSet struct {
	text   string   // for the prompt
	full   []string // skills whose --help is shown whole
	listed []string // skills only named (with their help's first line)
}

// skillContext describes the skills for a step about query: the --help of
// up to SkillsInFull ready skills, chat (it is how the agent answers a
// person) and the most relevant to query, the others by name and first
// line, skills whose --help failed with why, and the built-in
// create-skill. Relevance is by description, as Voyager retrieves skills:
// embeddings when configured, else word overlap weighted by rarity.
func (in *Instance) skillContext(ctx context.Context, query string) (skillSet, error) {
	list, err := in.skills.List()
	if err != nil {
		return skillSet{}, err
	}
	var ok []readySkill
	var broken strings.Builder
	for _, s := range list {
		if !s.HasMain {
			fmt.Fprintf(&broken, "- %s: not usable: no main.py\n", s.Name)
			continue
		}
		help, err := in.skills.Help(ctx, s.Name)
		if err != nil {
			fmt.Fprintf(&broken, "- %s: not usable: %s\n", s.Name, clip.Line(err.Error(), 300))
			continue
		}
		ok = append(ok, readySkill{s.Name, help})
	}
	tools, notes := in.mcp.offer(ctx)
	ok = append(ok, tools...)
	for _, n := range notes {
		// Not a skill: nothing create-skill could repair.
		fmt.Fprintf(&broken, "- MCP, a server the person added (not a skill): %s\n", clip.Line(n, 300))
	}
	full := map[string]bool{}
	if len(ok) <= in.opts.SkillsInFull {
		for _, r := range ok {
			full[r.name] = true
		}
	} else {
		docs := make([]string, len(ok))
		for i, r := range ok {
			docs[i] = r.name + " " + r.help
		}
		for i, r := range ok {
			if r.name == "chat" {
				full[r.name] = true
				docs[i] = ""
			}
		}
		for _, i := range in.rankTexts(ctx, query, docs) {
			if len(full) >= in.opts.SkillsInFull {
				break
			}
			full[ok[i].name] = true
		}
	}
	var set skillSet
	var b strings.Builder
	for _, r := range ok {
		if full[r.name] {
			set.full = append(set.full, r.name)
			fmt.Fprintf(&b, "### %s\n%s\n\n", r.name, r.help)
		}
	}
	var others strings.Builder
	for _, r := range ok {
		if !full[r.name] {
			set.listed = append(set.listed, r.name)
			first, _, _ := strings.Cut(r.help, "\n")
			if !strings.HasPrefix(first, r.name+":") {
				first = r.name + ": " + first
			}
			fmt.Fprintf(&others, "- %s\n", clip.Line(first, 160))
		}
	}
	vars := map[string]string{"skills_in_full": strings.TrimSpace(b.String()), "other_skills": strings.TrimSpace(others.String()),
		"broken_skills": strings.TrimSpace(broken.String())}
	tmpl, err := in.template("create-skill", "skills.md")
	if err != nil {
		return set, err
	}
	set.text, err = render("create-skill/skills.md", tmpl, vars)
	set.text = strings.TrimSpace(set.text)
	return set, err
}

// rankTexts orders the docs relevant to query, best first; empty docs and
// docs sharing nothing with it are left out. With an embedder it ranks by
// cosine similarity (falling back to words when the endpoint fails), else
// by shared words of four letters or more, each weighted by how rare it
// is among the docs.
func (in *Instance) rankTexts(ctx context.Context, query string, docs []string) []int {
	score := make([]float64, len(docs))
	if e := in.opts.Embedder; e != nil {
		vecs, err := e.Embed(ctx, append([]string{query}, docs...))
		if err == nil {
			for i := range docs {
				score[i] = cosine(vecs[0], vecs[i+1])
			}
			return rankOrder(docs, score)
		}
		in.opts.Logger.Warn("skills: embeddings failed; ranking skills by their words", "err", err)
	}
	df := map[string]int{}
	bags := make([]map[string]bool, len(docs))
	for i, d := range docs {
		bags[i] = wordSet(d)
		for w := range bags[i] {
			df[w]++
		}
	}
	for w := range wordSet(query) {
		for i := range docs {
			if bags[i][w] {
				score[i] += math.Log(1 + float64(len(docs))/float64(df[w]))
			}
		}
	}
	return rankOrder(docs, score)
}

func rankOrder(docs []string, score []float64) []int {
	var idx []int
	for i, d := range docs {
		if d != "" && score[i] > 0 {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return score[idx[a]] > score[idx[b]] })
	return idx
}

func wordSet(text string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len([]rune(w)) >= 4 {
			out[w] = true
		}
	}
	return out
}

func cosine(a, b []float32) float64 {
	var s float64
	for i := range min(len(a), len(b)) {
		s += float64(a[i]) * float64(b[i])
	}
	return s // the embedder returns unit vectors
}

// Exchange is one turn of a chat: what the person said and what the agent
// showed them.
type Exchange struct {
	At    time.Time `json:"at"`
	Input string    `json:"input"`
	Reply string    `json:"reply"`
}

// addExchange appends a turn to the current chat, keeping the last
// Conversation turns.
func (in *Instance) addExchange(x Exchange) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.conversation = append(in.conversation, x)
	if n := len(in.conversation) - in.opts.Conversation; n > 0 {
		in.conversation = append([]Exchange(nil), in.conversation[n:]...)
	}
}

func (in *Instance) conversationSnapshot() []Exchange {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Exchange(nil), in.conversation...)
}

// formatConversation is the current chat, oldest first; "" when there is
// none.
func (in *Instance) formatConversation(parts *pieces) string {
	var lines []string
	for _, x := range in.conversationSnapshot() {
		at := x.At.UTC().Format("15:04")
		lines = append(lines, parts.item("person.md", map[string]string{"time": at, "input": clip.Line(x.Input, 2000)}))
		if x.Reply != "" {
			lines = append(lines, parts.item("you.md", map[string]string{"time": at, "reply": clip.Line(x.Reply, 2000)}))
		}
	}
	return strings.Join(lines, "\n")
}

func formatCandidates(parts *pieces, cs []Candidate) string {
	var lines []string
	for i, c := range cs {
		lines = append(lines, parts.item("candidate.md", map[string]string{"number": strconv.Itoa(i + 1), "action": c.Action, "skill": c.Skill,
			"input": compactJSON(c.Input), "predicted": c.Predicted, "counterfactual": c.Counterfactual}))
	}
	return strings.Join(lines, "\n")
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
