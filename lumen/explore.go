package lumen

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/lumen/memory"
	"github.com/llmkernels/kernels/lumen/skill"
)

// ConsideredQuestion is a question EXPLORE weighed: what would change if
// it were investigated (the explore loop's counterfactual).
type ConsideredQuestion struct {
	Question        string `json:"question"`
	WhatWouldChange string `json:"what_would_change"`
}

type exploration struct {
	Considered []ConsideredQuestion `json:"considered" jsonschema:"minItems=1,maxItems=5"`
	Question   string               `json:"question"`
	Why        string               `json:"why"`
	Skill      string               `json:"skill"`
	Input      json.RawMessage      `json:"input"`
	// Importance is how much the answer could matter (0..1), for the self
	// memory of the finding.
	Importance *float64 `json:"importance,omitempty" jsonschema:"minimum=0,maximum=1"`
}

// ExploreReport is what one explore loop did.
type ExploreReport struct {
	Question   string               `json:"question"`
	Why        string               `json:"why,omitempty"`
	Considered []ConsideredQuestion `json:"considered,omitempty"`
	Skill      *skill.Result        `json:"skill,omitempty"`
	Found      string               `json:"found,omitempty"`
	Refused    []string             `json:"refused,omitempty"`
	Stopped    string               `json:"stopped,omitempty"`
	Notes      []string             `json:"notes,omitempty"` // as ActionReport.Notes
	Usage      Usage                `json:"usage"`
}

// Explore runs one explore loop: one open-ended question filtered through
// the perpetual goals and values, investigated with a skill, and recorded.
// It writes memories only.
func (in *Instance) Explore(ctx context.Context) (*ExploreReport, error) {
	rep := &ExploreReport{}
	step := context.WithoutCancel(ctx)
	if err := in.writable(); err != nil {
		return rep, err
	}
	in.beginTurn()
	snap, err := in.snapshot()
	if err != nil {
		return rep, in.stepFailed("explore", err)
	}
	var perpetual []GoalRecord
	for _, g := range snap.goals {
		if g.Status == GoalPerpetual {
			perpetual = append(perpetual, g)
		}
	}
	query := ""
	for _, g := range perpetual {
		query += g.Name + " "
	}
	query += valueNames(activeValues(snap.values))
	ret, err := in.mem.Retrieve(step, in.query(query, nil))
	if err != nil {
		return rep, in.stepFailed("explore", err)
	}
	rep.Notes = in.retrievalNotes(ret)
	skills, err := in.skillContext(step, query)
	if err != nil {
		return rep, in.stepFailed("explore", err)
	}
	vars := snap.vars(in.opts.Now())
	vars["perpetual_goals"] = formatGoals(perpetual)
	vars["memories"] = formatMemories(ret.Entries)
	vars["skills"] = skills.text
	ex, err := ask[exploration](step, in, "explore", vars, &rep.Usage)
	if err != nil {
		return rep, in.stepFailed("explore", err)
	}
	rep.Question, rep.Why, rep.Considered = ex.Question, ex.Why, ex.Considered
	var considered []string
	for _, c := range ex.Considered {
		considered = append(considered, fmt.Sprintf("%q (would change: %s)", c.Question, c.WhatWouldChange))
	}
	method := "no skill"
	if ex.Skill != "" {
		method = "skill " + ex.Skill + " with " + clip.Line(compactJSON(ex.Input), 300)
	}
	if _, err := in.rememberUsed(memory.Kernel, "explore", "explore loop",
		fmt.Sprintf("EXPLORE: loaded soul.md, %d values, %d perpetual goals, %d memories (%s). Considered %s. Question: %q. Method: %s.",
			len(snap.values), len(perpetual), len(ret.Entries), ret.Mode, strings.Join(considered, "; "), ex.Question, method),
		map[string]any{"loop": LoopExplore, "loaded": snap.loaded(len(ret.Entries)), "considered": ex.Considered,
			"question": ex.Question, "skill": ex.Skill, "input": ex.Input, "skills_in_full": skills.full}, ret.IDs()); err != nil {
		return rep, err
	}
	if stop, err := in.interrupted(ctx, "explore", &rep.Stopped); stop || err != nil {
		return rep, err
	}

	switch {
	case ex.Skill == skill.BuiltinCreate:
		// The explore loop may read and invoke skills, never write them.
		msg := "refused: the explore loop may not write skills (asked to use create-skill); only the action loop may, through a goal"
		rep.Refused = append(rep.Refused, msg)
		if _, err := in.remember(memory.Kernel, "explore", "permission check", msg, map[string]any{"refused": true, "loop": LoopExplore, "file": "skills"}); err != nil {
			return rep, err
		}
		rep.Found = "nothing: no skill could investigate, and the explore loop cannot create one"
	case ex.Skill == "" || !in.usable(step, ex.Skill):
		rep.Found = fmt.Sprintf("nothing yet: no ready skill can investigate it (asked for %q)", ex.Skill)
	default:
		res, what, err := in.invoke(step, ex.Skill, ex.Input, "explore: "+ex.Question)
		if err != nil {
			return rep, in.stepFailed("explore", err)
		}
		rep.Skill = res
		rep.Found = res.Output
		if !res.OK {
			rep.Found = "the skill failed: " + res.Error
		}
		if _, err := in.remember(memory.Kernel, "explore", "explore loop",
			fmt.Sprintf("EXPLORE: %s %s in %s; returned: %s", what, ex.Skill, res.Duration.Round(1e6), clip.Line(rep.Found, 600)),
			map[string]any{"loop": LoopExplore, "skill": ex.Skill, "input": ex.Input, "result": res}); err != nil {
			return rep, err
		}
	}
	_, err = in.write(memory.Memory{Author: memory.Self, Weight: importance(ex.Importance, memory.Self), Step: "explore", Situation: "exploring",
		Description: fmt.Sprintf("I asked myself: %s Why: %s Method: %s. Found: %s", ex.Question, ex.Why, method, clip.Line(rep.Found, 800))},
		map[string]any{"question": ex.Question, "skill": ex.Skill})
	return rep, err
}
