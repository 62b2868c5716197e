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
	WhatWouldChange string `json:"what_would_change" jsonschema:"description=what would change for you if you investigated it"`
}

type exploration struct {
	Considered []ConsideredQuestion `json:"considered" jsonschema:"minItems=1,maxItems=5"`
	Question   string               `json:"question" jsonschema:"description=the one open-ended question you chose"`
	Why        string               `json:"why" jsonschema:"description=why it matters, through your perpetual goals and values"`
	Skill      string               `json:"skill" jsonschema:"description=the available skill to investigate with; empty if none can"`
	Input      json.RawMessage      `json:"input" jsonschema:"description=the JSON input for that skill, as its --help describes"`
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
	Usage      Usage                `json:"usage"`
}

// Explore runs one explore loop: one open-ended question filtered through
// the perpetual goals and values, investigated with a skill, and recorded.
// It writes memories only.
func (in *Instance) Explore(ctx context.Context) (*ExploreReport, error) {
	rep := &ExploreReport{}
	step := context.WithoutCancel(ctx)
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
	ret, err := in.mem.Retrieve(step, memory.Query{Text: query, Recent: in.opts.Recent, TopK: in.opts.TopK})
	if err != nil {
		return rep, in.stepFailed("explore", err)
	}
	skills, err := in.skillContext(step)
	if err != nil {
		return rep, in.stepFailed("explore", err)
	}
	vars := snap.vars(in.opts.Now())
	vars["perpetual_goals"] = formatGoals(perpetual)
	if len(perpetual) == 0 {
		vars["perpetual_goals"] = "(no perpetual goals yet; reflection sets them)"
	}
	vars["memories"] = formatMemories(ret.Entries)
	vars["skills"] = skills
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
			"question": ex.Question, "skill": ex.Skill, "input": ex.Input, "usage": rep.Usage}, ret.IDs()); err != nil {
		return rep, err
	}
	if stop, err := in.interrupted(ctx, "explore", &rep.Stopped); stop {
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
	case ex.Skill == "" || !in.skills.Available(ex.Skill):
		rep.Found = fmt.Sprintf("nothing yet: no available skill can investigate it (asked for %q)", ex.Skill)
	default:
		if _, err := in.skills.Help(step, ex.Skill); err != nil {
			return rep, in.stepFailed("explore", err)
		}
		res, err := in.skills.Invoke(step, ex.Skill, skill.Request{Input: ex.Input, Situation: "explore: " + ex.Question})
		if err != nil {
			return rep, in.stepFailed("explore", err)
		}
		rep.Skill = res
		rep.Found = res.Output
		if !res.OK {
			rep.Found = "the skill failed: " + res.Error
		}
		if _, err := in.remember(memory.Kernel, "explore", "explore loop",
			fmt.Sprintf("EXPLORE: invoked skill %s in %s; returned: %s", ex.Skill, res.Duration.Round(1e6), clip.Line(rep.Found, 600)),
			map[string]any{"loop": LoopExplore, "skill": ex.Skill, "input": ex.Input, "result": res}); err != nil {
			return rep, err
		}
	}
	_, err = in.remember(memory.Self, "explore", "exploring",
		fmt.Sprintf("I asked myself: %s Why: %s Method: %s. Found: %s", ex.Question, ex.Why, method, clip.Line(rep.Found, 800)),
		map[string]any{"question": ex.Question, "skill": ex.Skill})
	return rep, err
}
