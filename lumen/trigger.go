package lumen

import (
	"context"
	"fmt"
	"strings"

	"github.com/llmkernels/kernels/lumen/memory"
)

// Reflection trigger conditions.
const (
	FiredDelta      = "prediction-delta" // the world model was wrong
	FiredTension    = "value-tension"    // the action scored high on conflicting values
	FiredCompleted  = "goal-completed"   // a goal was just completed
	FiredStale      = "goal-stale"       // a goal sat idle for StaleAfter action cycles
	FiredPeriodic   = "periodic"         // ReflectEvery action cycles since the last reflection
	FiredSelfExam   = "self-examination" // external input asked for it
	FiredManual     = "manual"           // lumen reflect
	highValueWeight = 0.5                // a value "scores high" at this weight or more
	stepTrigger     = "trigger"          // step name of the trigger check
	stepReview      = "review"           // step name that marks a reflection
	stepThink       = "think"            // step name that marks an action cycle
	triggerLLMSteps = "value tension and requests for self-examination"
)

// Fired is a trigger condition that held.
type Fired struct {
	Condition string `json:"condition"`
	Detail    string `json:"detail"`
}

func (f Fired) String() string { return f.Condition + " (" + f.Detail + ")" }

// triggerAnswer is the TRIGGER step's judgment of the two conditions that
// need one; the kernel checks both against the facts.
type triggerAnswer struct {
	TensionValues        []string `json:"tension_values"`
	TensionWhy           string   `json:"tension_why"`
	SelfExaminationQuote string   `json:"self_examination_quote"`
}

// afterAction runs the reflection trigger after an action loop and, when
// a condition fires, the reflection loop.
func (in *Instance) afterAction(ctx context.Context, after string, tr trigger, rep *ActionReport, delta *float64) error {
	if stop, err := in.interrupted(ctx, after, &rep.Stopped); stop || err != nil {
		return err
	}
	step := context.WithoutCancel(ctx)
	if in.noReflect {
		_, err := in.remember(memory.Kernel, stepTrigger, "reflection trigger after the action loop",
			"TRIGGER: not checked: reflection is off for this run (lumen run --no-reflect)", map[string]any{"no_reflect": true})
		return err
	}
	fired, err := in.checkTrigger(step, tr, rep, delta)
	if err != nil {
		return in.stepFailed(stepTrigger, err)
	}
	rep.Fired = fired
	if len(fired) == 0 {
		return nil
	}
	if stop, err := in.interrupted(ctx, stepTrigger, &rep.Stopped); stop || err != nil {
		return err
	}
	rep.Reflection, err = in.reflect(ctx, fired)
	return err
}

// reflectionMark is the position and count of action cycles since the
// last reflection.
func (in *Instance) reflectionMark(ctx context.Context) (lastReview int64, cycles int, err error) {
	last, err := in.mem.List(ctx, memory.Filter{Authors: []string{memory.Kernel}, Step: stepReview, Limit: 1})
	if err != nil {
		return 0, 0, err
	}
	if len(last) == 1 {
		lastReview = last[0].Seq
	}
	cycles, err = in.mem.Count(ctx, memory.Filter{Authors: []string{memory.Kernel}, Step: stepThink, AfterSeq: lastReview})
	return lastReview, cycles, err
}

// checkTrigger evaluates the five conditions of the spec. Delta,
// completion, staleness and the period are the kernel's arithmetic; value
// tension and a request for self-examination need the TRIGGER step's
// judgment, which the kernel then checks (the values must be ones the
// action scored high on; the quote must be in the input). The LLM is only
// asked when one of those two could hold.
func (in *Instance) checkTrigger(ctx context.Context, tr trigger, rep *ActionReport, delta *float64) ([]Fired, error) {
	var fired []Fired
	checked := map[string]any{}
	if delta != nil {
		checked["delta"] = *delta
		if *delta > in.opts.DeltaThreshold {
			fired = append(fired, Fired{FiredDelta, fmt.Sprintf("delta %.2f > %.2f", *delta, in.opts.DeltaThreshold)})
		}
	}
	for _, a := range rep.Applied {
		if a.Change.Target == "goal" && a.Change.Op == "set_status" && a.Change.Status == GoalDone {
			fired = append(fired, Fired{FiredCompleted, fmt.Sprintf("goal %q done", a.Change.Name)})
		}
	}
	lastReview, cycles, err := in.reflectionMark(ctx)
	if err != nil {
		return nil, err
	}
	checked["cycles_since_reflection"] = cycles
	if cycles >= in.opts.ReflectEvery {
		fired = append(fired, Fired{FiredPeriodic, fmt.Sprintf("%d action cycles since the last reflection, every %d", cycles, in.opts.ReflectEvery)})
	}
	stale, err := in.staleGoals(ctx, lastReview)
	if err != nil {
		return nil, err
	}
	fired = append(fired, stale...)

	// The two judged conditions.
	var high []Value
	if v := rep.Verdict; v != nil && v.Outcome == OutcomeAct {
		snap, err := in.snapshot()
		if err != nil {
			return nil, err
		}
		for _, name := range v.Scores[v.Chosen-1].Values {
			if val, ok := findValue(activeValues(snap.values), name); ok && val.Weight >= highValueWeight {
				high = append(high, val)
			}
		}
	}
	var u Usage
	if len(high) >= 2 || tr.external != "" {
		var names []string
		for _, v := range high {
			names = append(names, fmt.Sprintf("%s (%.2f)", v.Name, v.Weight))
		}
		parts, err := in.parts()
		if err != nil {
			return nil, err
		}
		vars := map[string]string{ // the names of triggerVars
			"trigger":     tr.prompt(parts),
			"input":       tr.external,
			"action":      "",
			"outcome":     rep.Outcome,
			"high_values": strings.Join(names, ", "),
		}
		if v := rep.Verdict; v != nil && v.Outcome == OutcomeAct {
			vars["action"] = v.Scores[v.Chosen-1].Action
		}
		if len(high) < 2 {
			vars["high_values"] = ""
		}
		ans, err := ask[triggerAnswer](ctx, in, stepTrigger, vars, &u)
		rep.Usage.Add(u)
		if err != nil {
			return nil, err
		}
		checked["judged"] = ans
		var conflicting []string
		for _, name := range ans.TensionValues {
			for _, v := range high {
				if sameName(v.Name, name) {
					conflicting = append(conflicting, v.Name)
				}
			}
		}
		if len(conflicting) >= 2 {
			fired = append(fired, Fired{FiredTension, fmt.Sprintf("%s: %s", strings.Join(conflicting, " vs "), ans.TensionWhy)})
		}
		if q := strings.TrimSpace(ans.SelfExaminationQuote); q != "" && tr.external != "" &&
			strings.Contains(strings.ToLower(tr.external), strings.ToLower(q)) {
			fired = append(fired, Fired{FiredSelfExam, fmt.Sprintf("the input says %q", q)})
		}
	} else {
		checked["judged"] = "not asked: no external input and fewer than two high values, so " + triggerLLMSteps + " cannot hold"
	}
	desc := "TRIGGER: none fired; next cycle"
	if len(fired) > 0 {
		var parts []string
		for _, f := range fired {
			parts = append(parts, f.String())
		}
		desc = "TRIGGER: fired " + strings.Join(parts, "; ") + "; entering reflection"
	}
	_, err = in.remember(memory.Kernel, stepTrigger, "reflection trigger after the action loop", desc,
		map[string]any{"fired": fired, "checked": checked})
	return fired, err
}

// staleGoals are the todo/working goals that went StaleAfter action cycles
// without being pursued, created or changed, counting from the last
// reflection at most (so a stale goal fires once per reflection).
func (in *Instance) staleGoals(ctx context.Context, lastReview int64) ([]Fired, error) {
	idle, err := in.idleGoals(ctx, lastReview)
	if err != nil {
		return nil, err
	}
	var fired []Fired
	for _, g := range idle {
		if g.Cycles >= in.opts.StaleAfter {
			fired = append(fired, Fired{FiredStale, fmt.Sprintf("goal %q idle for %d action cycles", g.Name, g.Cycles)})
		}
	}
	return fired, nil
}

// IdleGoal is a todo or working goal and how many action cycles passed
// since a memory last named it (or since from, if later).
type IdleGoal struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Cycles int    `json:"idle_cycles"`
}

func (in *Instance) idleGoals(ctx context.Context, from int64) ([]IdleGoal, error) {
	goals, err := in.Goals()
	if err != nil {
		return nil, err
	}
	marks, err := in.mem.GoalMarks(ctx)
	if err != nil {
		return nil, err
	}
	var out []IdleGoal
	for _, g := range goals {
		if g.Status != GoalTodo && g.Status != GoalWorking {
			continue
		}
		since := max(from, marks[strings.ToLower(strings.TrimSpace(g.Name))].TouchedSeq)
		n, err := in.mem.Count(ctx, memory.Filter{Authors: []string{memory.Kernel}, Step: stepThink, AfterSeq: since})
		if err != nil {
			return nil, err
		}
		out = append(out, IdleGoal{Name: g.Name, Status: g.Status, Cycles: n})
	}
	return out, nil
}

// triggerVars are the variables of the trigger step's prompts.
var triggerVars = []string{"trigger", "input", "action", "outcome", "high_values"}
