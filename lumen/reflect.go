package lumen

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/lumen/memory"
)

// Tension is something REVIEW found worth questioning, with how strongly
// the memories support it.
type Tension struct {
	Description string   `json:"description"`
	Evidence    []string `json:"evidence"`
	Strength    float64  `json:"strength" jsonschema:"minimum=0,maximum=1"`
}

type reviewAnswer struct {
	Summary  string    `json:"summary"`
	Tensions []Tension `json:"tensions"`
	// Importance is how much this period matters to who the agent is
	// (0..1), for the self memory of the review.
	Importance *float64 `json:"importance,omitempty" jsonschema:"minimum=0,maximum=1"`
}

// Proposal is a change ASK proposes to the self.
type Proposal struct {
	Tension        int    `json:"tension" jsonschema:"minimum=1"`
	Question       string `json:"question"`
	Counterfactual string `json:"counterfactual"`
	Change         Change `json:"change"`
	Rationale      string `json:"rationale"`
	// Importance is how much the change matters to who the agent is
	// (0..1), for the self memory explaining it.
	Importance *float64 `json:"importance,omitempty" jsonschema:"minimum=0,maximum=1"`
}

type askAnswer struct {
	Proposals []Proposal `json:"proposals"`
}

// ProposalConflict names proposals that contradict each other.
type ProposalConflict struct {
	Proposals []int  `json:"proposals" jsonschema:"minItems=2"`
	Rationale string `json:"rationale"`
}

type evolveAnswer struct {
	Conflicts []ProposalConflict `json:"conflicts"`
}

// Resolution is how a conflict between proposals was settled: the one
// with the strongest evidence from REVIEW is kept.
type Resolution struct {
	Proposals []int  `json:"proposals"`
	Kept      int    `json:"kept"`
	Dropped   []int  `json:"dropped"`
	FoundBy   string `json:"found_by"` // "kernel" (same value, goal or soul) or "llm" (the EVOLVE step)
	Rationale string `json:"rationale"`
}

// ReflectionReport is what one reflection did.
type ReflectionReport struct {
	Fired     []Fired         `json:"fired"`
	Summary   string          `json:"summary,omitempty"`
	Tensions  []Tension       `json:"tensions,omitempty"`
	Proposals []Proposal      `json:"proposals,omitempty"`
	Conflicts []Resolution    `json:"conflicts,omitempty"`
	Applied   []AppliedChange `json:"applied,omitempty"`
	Failed    []string        `json:"failed,omitempty"`
	Stopped   string          `json:"stopped,omitempty"`
	Usage     Usage           `json:"usage"`
}

// Reflect runs the reflection loop now (lumen reflect), without an action
// loop before it.
func (in *Instance) Reflect(ctx context.Context) (*ReflectionReport, error) {
	in.beginTurn()
	return in.reflect(ctx, []Fired{{FiredManual, "lumen reflect"}})
}

// reflect runs REVIEW → ASK → EVOLVE.
func (in *Instance) reflect(ctx context.Context, fired []Fired) (*ReflectionReport, error) {
	rep := &ReflectionReport{Fired: fired}
	step := context.WithoutCancel(ctx)
	if err := in.writable(); err != nil {
		return rep, err
	}
	rv, vars, parts, err := in.review(step, fired, rep)
	if err != nil {
		return rep, err
	}
	if stop, err := in.interrupted(ctx, stepReview, &rep.Stopped); stop || err != nil {
		return rep, err
	}
	proposals, err := in.askProposals(step, parts, vars, rv, rep)
	if err != nil {
		return rep, err
	}
	if stop, err := in.interrupted(ctx, "ask", &rep.Stopped); stop || err != nil {
		return rep, err
	}
	return rep, in.evolve(step, parts, vars, rv.Tensions, proposals, rep)
}

// review runs REVIEW: self, goal and external memories only (kernel
// memories are the audit trail, not the experience), with the prediction
// deltas and value conflicts since the last reflection. It returns the
// answer and the variables and parts the later steps fill in.
func (in *Instance) review(step context.Context, fired []Fired, rep *ReflectionReport) (reviewAnswer, map[string]string, *pieces, error) {
	var firedText []string
	for _, f := range fired {
		firedText = append(firedText, f.String())
	}
	var rv reviewAnswer
	snap, err := in.snapshot()
	if err != nil {
		return rv, nil, nil, in.stepFailed(stepReview, err)
	}
	lastReview, _, err := in.reflectionMark(step)
	if err != nil {
		return rv, nil, nil, in.stepFailed(stepReview, err)
	}
	query := strings.Join(firedText, " ") + " " + valueNames(snap.values)
	ret, err := in.mem.Retrieve(step, in.query(query, []string{memory.Self, memory.Goal, memory.External}))
	if err != nil {
		return rv, nil, nil, in.stepFailed(stepReview, err)
	}
	parts, err := in.parts()
	if err != nil {
		return rv, nil, nil, in.stepFailed(stepReview, err)
	}
	deltas, conflicts, err := in.sinceReflection(step, parts, lastReview)
	if err != nil {
		return rv, nil, nil, in.stepFailed(stepReview, err)
	}
	summaries, err := in.summaries()
	if err != nil {
		return rv, nil, nil, in.stepFailed(stepReview, err)
	}
	vars := snap.vars(in.opts.Now())
	vars["fired"] = strings.Join(firedText, "\n")
	vars["memories"] = formatMemories(ret.Entries)
	vars["deltas"] = strings.Join(deltas, "\n")
	vars["conflicts"] = strings.Join(conflicts, "\n")
	vars["summaries"] = summaries
	asks := []string{"summary", "tensions"}
	if err := in.checkPrompts(slices.Collect(maps.Keys(vars)), map[string][]string{"ask": asks, "evolve": append(asks, "proposals")}); err != nil {
		return rv, nil, nil, in.stepFailed(stepReview, err)
	}
	if rv, err = ask[reviewAnswer](step, in, stepReview, vars, &rep.Usage); err != nil {
		return rv, nil, nil, in.stepFailed(stepReview, err)
	}
	rep.Summary, rep.Tensions = rv.Summary, rv.Tensions
	if _, err := in.rememberUsed(memory.Kernel, stepReview, "reflection loop",
		fmt.Sprintf("REVIEW: triggers fired: %s. Reviewed %d memories (self, goal, external; %s), %d prediction deltas, %d value conflicts, %d goals; found %d tensions.",
			strings.Join(firedText, "; "), len(ret.Entries), ret.Mode, len(deltas), len(conflicts), len(snap.goals), len(rv.Tensions)),
		map[string]any{"loop": LoopReflection, "fired": fired, "reviewed": ret.IDs(), "tensions": rv.Tensions}, ret.IDs()); err != nil {
		return rv, nil, nil, err
	}
	var tensionText []string
	for i, t := range rv.Tensions {
		tensionText = append(tensionText, fmt.Sprintf("%d) %s (strength %.2f)", i+1, t.Description, t.Strength))
	}
	if _, err := in.write(memory.Memory{Author: memory.Self, Weight: importance(rv.Importance, memory.Self), Step: stepReview, Situation: "reflection",
		Description: fmt.Sprintf("I reflected because: %s. What happened: %s Tensions: %s", strings.Join(firedText, "; "), rv.Summary, orNoneJoined(tensionText))},
		map[string]any{"fired": fired, "tensions": rv.Tensions}); err != nil {
		return rv, nil, nil, err
	}
	return rv, vars, parts, nil
}

// askProposals runs ASK: the changes the model proposes for the tensions
// REVIEW found.
func (in *Instance) askProposals(step context.Context, parts *pieces, vars map[string]string, rv reviewAnswer, rep *ReflectionReport) ([]Proposal, error) {
	vars["summary"] = rv.Summary
	vars["tensions"] = formatTensions(parts, rv.Tensions)
	asked, err := ask[askAnswer](step, in, "ask", vars, &rep.Usage)
	if err != nil {
		return nil, in.stepFailed("ask", err)
	}
	rep.Proposals = asked.Proposals
	var questions []string
	for i, p := range asked.Proposals {
		questions = append(questions, fmt.Sprintf("#%d %s If I %s: %s", i+1, p.Question, p.Change, p.Counterfactual))
	}
	if _, err := in.remember(memory.Kernel, "ask", "reflection loop",
		fmt.Sprintf("ASK: %d proposals: %s", len(asked.Proposals), orNoneJoined(questions)),
		map[string]any{"loop": LoopReflection, "proposals": asked.Proposals}); err != nil {
		return nil, err
	}
	if len(asked.Proposals) > 0 {
		var most *float64
		for _, p := range asked.Proposals {
			if p.Importance != nil && (most == nil || *p.Importance > *most) {
				most = p.Importance
			}
		}
		if _, err := in.write(memory.Memory{Author: memory.Self, Weight: importance(most, memory.Self), Step: "ask", Situation: "reflection",
			Description: "I questioned myself: " + strings.Join(questions, " ")},
			map[string]any{"proposals": asked.Proposals}); err != nil {
			return nil, err
		}
	}
	return asked.Proposals, nil
}

// evolve checks the proposals for consistency, resolves conflicts by the
// strength of their evidence, and applies the rest.
func (in *Instance) evolve(ctx context.Context, parts *pieces, vars map[string]string, tensions []Tension, proposals []Proposal, rep *ReflectionReport) error {
	if len(proposals) == 0 {
		_, err := in.remember(memory.Kernel, "evolve", "reflection loop", "EVOLVE: no changes proposed; no file modified", map[string]any{"loop": LoopReflection})
		return err
	}
	strength := func(p int) float64 {
		t := proposals[p-1].Tension
		if t < 1 || t > len(tensions) {
			return 0
		}
		return tensions[t-1].Strength
	}
	found := kernelConflicts(proposals)
	if len(proposals) >= 2 {
		vars["proposals"] = formatProposals(parts, proposals, tensions)
		ans, err := ask[evolveAnswer](ctx, in, "evolve", vars, &rep.Usage)
		if err != nil {
			return in.stepFailed("evolve", err)
		}
		for _, c := range ans.Conflicts {
			valid := true
			for _, n := range c.Proposals {
				valid = valid && n >= 1 && n <= len(proposals)
			}
			if valid && len(c.Proposals) >= 2 {
				found = append(found, foundConflict{proposals: c.Proposals, by: "llm", why: c.Rationale})
			}
		}
	}
	dropped, err := in.resolveConflicts(found, proposals, strength, rep)
	if err != nil {
		return err
	}
	return in.applyProposals(ctx, tensions, proposals, dropped, rep)
}

// resolveConflicts keeps, of each set of proposals found in conflict,
// the one with the strongest evidence, logging each resolution; it
// returns the numbers of the proposals dropped.
func (in *Instance) resolveConflicts(found []foundConflict, proposals []Proposal, strength func(int) float64, rep *ReflectionReport) (map[int]bool, error) {
	dropped := map[int]bool{}
	for _, c := range found {
		var live []int
		for _, n := range c.proposals {
			if !dropped[n] && !contains(live, n) {
				live = append(live, n)
			}
		}
		if len(live) < 2 {
			continue
		}
		sort.Ints(live)
		kept := live[0]
		for _, n := range live[1:] {
			if strength(n) > strength(kept)+1e-9 {
				kept = n
			}
		}
		res := Resolution{Proposals: live, Kept: kept, FoundBy: c.by}
		var parts []string
		for _, n := range live {
			parts = append(parts, fmt.Sprintf("#%d (%s; evidence strength %.2f)", n, proposals[n-1].Change, strength(n)))
			if n != kept {
				res.Dropped = append(res.Dropped, n)
				dropped[n] = true
			}
		}
		res.Rationale = fmt.Sprintf("kept #%d: the strongest evidential support from REVIEW among %s", kept, strings.Join(parts, ", "))
		if c.why != "" {
			res.Rationale += ". Why they conflict: " + c.why
		}
		rep.Conflicts = append(rep.Conflicts, res)
		if _, err := in.remember(memory.Self, "evolve", "reflection: consistency check",
			"Two of my proposals contradicted each other; "+res.Rationale+".", map[string]any{"resolution": res}); err != nil {
			return nil, err
		}
		if _, err := in.remember(memory.Kernel, "evolve", "reflection loop",
			fmt.Sprintf("EVOLVE: consistency check (%s): conflict between %s; %s", c.by, joinInts(live), res.Rationale),
			map[string]any{"loop": LoopReflection, "resolution": res}); err != nil {
			return nil, err
		}
	}
	return dropped, nil
}

// applyProposals applies the proposals not dropped, each explained by a
// self memory and logged by a kernel one; one that cannot be applied is
// logged and the others go on.
func (in *Instance) applyProposals(ctx context.Context, tensions []Tension, proposals []Proposal, dropped map[int]bool, rep *ReflectionReport) error {
	for i, p := range proposals {
		if dropped[i+1] {
			continue
		}
		applied, err := in.apply(ctx, LoopReflection, "evolve", p.Change)
		if err != nil {
			rep.Failed = append(rep.Failed, fmt.Sprintf("#%d %s: %v", i+1, p.Change, err))
			if _, err := in.remember(memory.Kernel, "evolve", "reflection loop",
				fmt.Sprintf("EVOLVE: proposal #%d (%s) not applied: %v", i+1, p.Change, err),
				map[string]any{"loop": LoopReflection, "proposal": p, "error": err.Error()}); err != nil {
				return err
			}
			continue
		}
		rep.Applied = append(rep.Applied, *applied)
		trig := "reflection"
		if p.Tension >= 1 && p.Tension <= len(tensions) {
			trig = tensions[p.Tension-1].Description
		}
		data := map[string]any{"change": p.Change, "file": applied.File, "before": applied.Before, "after": applied.After, "tension": trig}
		data[p.Change.Target] = p.Change.Name
		selfID, err := in.write(memory.Memory{Author: memory.Self, Weight: importance(p.Importance, memory.Self), Step: "evolve", Situation: "reflection: change",
			Description: fmt.Sprintf("I changed myself: %s (in %s, %s → %s). What triggered it: %s. Why: %s",
				p.Change, applied.File, clip.Line(string(applied.Before), 200), clip.Line(string(applied.After), 200), trig, p.Rationale)}, data)
		if err != nil {
			return err
		}
		data["explained_by"] = selfID
		data["loop"] = LoopReflection
		if _, err := in.remember(memory.Kernel, "evolve", "reflection loop",
			fmt.Sprintf("EVOLVE: modified %s: %s; before %s; after %s", applied.File, p.Change, clip.Line(string(applied.Before), 300), clip.Line(string(applied.After), 300)),
			data); err != nil {
			return err
		}
	}
	return nil
}

type foundConflict struct {
	proposals []int
	by        string
	why       string
}

// kernelConflicts finds proposals that change the same thing in
// incompatible ways: two different weights or statuses for one value or
// goal, removing what another proposal changes, or two soul rewrites.
func kernelConflicts(ps []Proposal) []foundConflict {
	attr := func(c Change) string {
		switch c.Op {
		case "set_weight":
			return "weight"
		case "set_status":
			return "status"
		case "add", "remove":
			return "existence"
		}
		return "text"
	}
	var out []foundConflict
	for i := range ps {
		for j := i + 1; j < len(ps); j++ {
			a, b := ps[i].Change, ps[j].Change
			if a.Target != b.Target || (a.Target != "soul" && !sameName(a.Name, b.Name)) {
				continue
			}
			conflict := false
			switch {
			case a.Target == "soul":
				conflict = true
			case a.Op == "remove" || b.Op == "remove":
				conflict = a.Op != b.Op
			case attr(a) == attr(b):
				conflict = string(jsonOf(a)) != string(jsonOf(b))
			}
			if conflict {
				what := a.Target + " " + fmt.Sprintf("%q", a.Name)
				if a.Target == "soul" {
					what = "soul.md"
				}
				out = append(out, foundConflict{proposals: []int{i + 1, j + 1}, by: "kernel",
					why: fmt.Sprintf("both change %s: %s vs %s", what, a, b)})
			}
		}
	}
	return out
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func joinInts(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, fmt.Sprintf("#%d", x))
	}
	return strings.Join(s, " and ")
}

func orNoneJoined(parts []string) string {
	if len(parts) == 0 {
		return "none."
	}
	return strings.Join(parts, " ")
}

func formatTensions(parts *pieces, ts []Tension) string {
	var lines []string
	for i, t := range ts {
		lines = append(lines, parts.item("tension.md", map[string]string{"number": strconv.Itoa(i + 1), "description": t.Description, "strength": fmt.Sprintf("%.2f", t.Strength)}))
		for _, e := range t.Evidence {
			lines = append(lines, parts.item("evidence.md", map[string]string{"evidence": e}))
		}
	}
	return strings.Join(lines, "\n")
}

func formatProposals(parts *pieces, ps []Proposal, ts []Tension) string {
	var lines []string
	for i, p := range ps {
		strength := 0.0
		if p.Tension >= 1 && p.Tension <= len(ts) {
			strength = ts[p.Tension-1].Strength
		}
		lines = append(lines, parts.item("proposal.md", map[string]string{"number": strconv.Itoa(i + 1), "change": p.Change.String(),
			"tension": strconv.Itoa(p.Tension), "strength": fmt.Sprintf("%.2f", strength), "rationale": p.Rationale}))
	}
	return strings.Join(lines, "\n")
}

// sinceReflection lists the prediction deltas and value conflicts recorded
// since the last reflection. The kernel reads its own records for these
// numbers; the memories themselves are not shown to reflection.
func (in *Instance) sinceReflection(ctx context.Context, parts *pieces, lastReview int64) (deltas, conflicts []string, err error) {
	records, err := in.mem.List(ctx, memory.Filter{Authors: []string{memory.Kernel}, Step: "record", AfterSeq: lastReview})
	if err != nil {
		return nil, nil, err
	}
	for _, e := range records {
		var d struct {
			Action      string   `json:"action"`
			Predicted   string   `json:"predicted"`
			Outcome     string   `json:"outcome"`
			Delta       *float64 `json:"delta"`
			Explanation string   `json:"delta_explanation"`
		}
		if json.Unmarshal(e.Data, &d) != nil || d.Delta == nil {
			continue
		}
		deltas = append(deltas, parts.item("delta.md", map[string]string{"time": e.Timestamp.UTC().Format("2006-01-02 15:04"), "action": quote(d.Action),
			"predicted": quote(clip.Line(d.Predicted, 200)), "outcome": quote(clip.Line(d.Outcome, 200)), "delta": fmt.Sprintf("%.2f", *d.Delta), "explanation": d.Explanation}))
	}
	triggers, err := in.mem.List(ctx, memory.Filter{Authors: []string{memory.Kernel}, Step: stepTrigger, AfterSeq: lastReview})
	if err != nil {
		return nil, nil, err
	}
	for _, e := range triggers {
		var d struct {
			Fired []Fired `json:"fired"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			continue // a hand-edited trigger record: it names no tension we can quote
		}
		for _, f := range d.Fired {
			if f.Condition == FiredTension {
				conflicts = append(conflicts, parts.item("conflict.md", map[string]string{"time": e.Timestamp.UTC().Format("2006-01-02 15:04"), "detail": f.Detail}))
			}
		}
	}
	return deltas, conflicts, nil
}

// summaries joins every year's summary.md, oldest first.
func (in *Instance) summaries() (string, error) {
	paths, err := filepath.Glob(filepath.Join(in.memoryDir(), "[0-9][0-9][0-9][0-9]", "summary.md"))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		_, body := splitSummary(string(data))
		fmt.Fprintf(&b, "## %s\n%s\n\n", filepath.Base(filepath.Dir(p)), strings.TrimSpace(body))
	}
	return strings.TrimSpace(b.String()), nil
}
