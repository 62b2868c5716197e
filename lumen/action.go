package lumen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/lumen/memory"
	"github.com/llmkernels/kernels/lumen/skill"
)

// Candidate is an action THINK proposes, with its predicted outcome.
type Candidate struct {
	Action         string          `json:"action"`
	Skill          string          `json:"skill"`
	Input          json.RawMessage `json:"input"`
	Predicted      string          `json:"predicted_outcome"`
	Counterfactual string          `json:"counterfactual"`
}

// thought is THINK's answer.
type thought struct {
	Situation  string      `json:"situation"`
	Candidates []Candidate `json:"candidates" jsonschema:"minItems=1,maxItems=5"`
	// InputImportance is how much the person's input matters (0..1), for
	// the memory that holds it; absent when the trigger is a goal.
	InputImportance *float64 `json:"input_importance,omitempty" jsonschema:"minimum=0,maximum=1"`
}

// recordAnswer is RECORD's answer.
type recordAnswer struct {
	Outcome          string   `json:"outcome"`
	Delta            float64  `json:"delta" jsonschema:"minimum=0,maximum=1"`
	DeltaExplanation string   `json:"delta_explanation"`
	Changes          []Change `json:"changes"`
}

// trigger is what starts an action loop: external input (a chat turn) or
// the goal the cycle selected.
type trigger struct {
	external   string
	externalID string // the memory holding the input
	goal       *GoalRecord
}

func (t trigger) describe() string {
	if t.goal != nil {
		return fmt.Sprintf("pursue goal %q (weight %.2f, %s)", t.goal.Name, t.goal.Weight, t.goal.Status)
	}
	return "external input: " + t.external
}

// prompt is the trigger as the steps' {{trigger}} reads it, in the words
// of prompts/parts/trigger-*.md. (describe is the kernel's own wording, in
// memory situations that audit matches on.) The person's input is passed
// as written, line breaks and all: it is their message, not an item of a
// list.
func (t trigger) prompt(parts *pieces) string {
	if t.goal != nil {
		return parts.item("trigger-goal.md", map[string]string{"goal": quote(t.goal.Name), "weight": fmt.Sprintf("%.2f", t.goal.Weight), "status": string(t.goal.Status)})
	}
	return parts.fill("trigger-input.md", map[string]string{"input": t.external})
}

func (t trigger) text() string {
	if t.goal != nil {
		return t.goal.Name
	}
	return t.external
}

// ActionReport is what one action loop did.
type ActionReport struct {
	Trigger     string            `json:"trigger"`
	Situation   string            `json:"situation,omitempty"`
	Candidates  []Candidate       `json:"candidates,omitempty"`
	Verdict     *Verdict          `json:"verdict,omitempty"`
	CreatedGoal string            `json:"created_goal,omitempty"` // goal to author a missing skill (A = 0)
	Skill       *skill.Result     `json:"skill,omitempty"`
	Created     []string          `json:"created_skills,omitempty"`
	Predicted   string            `json:"predicted,omitempty"`
	Outcome     string            `json:"outcome,omitempty"`
	Delta       *float64          `json:"delta,omitempty"`
	Applied     []AppliedChange   `json:"applied,omitempty"`
	Refused     []string          `json:"refused,omitempty"`
	Fired       []Fired           `json:"fired,omitempty"`
	Reflection  *ReflectionReport `json:"reflection,omitempty"`
	Stopped     string            `json:"stopped,omitempty"` // the step after which Ctrl-C stopped the loop
	// Notes are what the person should know about how the loop ran: that
	// memories are recalled by their words while they are being embedded
	// (said once per process).
	Notes []string `json:"notes,omitempty"`
	Usage Usage    `json:"usage"`
}

// interrupted reports whether Ctrl-C asked the loop to stop; if so it
// writes a kernel memory saying after which step, and marks the report.
func (in *Instance) interrupted(ctx context.Context, step string, stopped *string) (bool, error) {
	if ctx.Err() == nil {
		return false, nil
	}
	*stopped = step
	_, err := in.remember(memory.Kernel, step, "interrupted", fmt.Sprintf("interrupted: stopped after %s at the user's request (Ctrl-C, SIGTERM or a closed output); the cycle ends here", strings.ToUpper(step)), nil)
	return true, err
}

// stepFailed records a failed step as a kernel memory and returns err. A
// step of a chat turn that Ctrl-C stopped during its model call is
// recorded as interrupted: the answer under way was dropped whole.
func (in *Instance) stepFailed(step string, err error) error {
	if in.chatCtx == nil || in.chatCtx.Err() == nil {
		return in.logErr(step, err)
	}
	if _, werr := in.remember(memory.Kernel, step, "interrupted",
		fmt.Sprintf("interrupted: stopped during %s at the user's request (Ctrl-C, SIGTERM or a closed output); the answer under way was dropped, nothing of it kept", strings.ToUpper(step)),
		map[string]any{"error": err.Error()}); werr != nil {
		return errors.Join(err, fmt.Errorf("recording that %s was interrupted: %w", step, werr))
	}
	return err
}

// actionLoop runs THINK → DECIDE → ACT → RECORD, then the reflection
// trigger and, when it fires, the reflection loop. Steps run to completion
// once started; Ctrl-C (ctx cancelled) stops the loop between steps.
func (in *Instance) actionLoop(ctx context.Context, tr trigger) (*ActionReport, error) {
	rep := &ActionReport{Trigger: tr.describe()}
	if err := in.writable(); err != nil {
		return rep, err
	}
	a := &actionRun{in: in, ctx: ctx, step: context.WithoutCancel(ctx), tr: tr, rep: rep}
	if err := a.think(); err != nil {
		return rep, err
	}
	if stop, err := in.interrupted(ctx, "think", &rep.Stopped); stop || err != nil {
		return rep, err
	}
	chosen, err := a.decide()
	if chosen == nil || err != nil {
		return rep, err
	}
	if stop, err := in.interrupted(ctx, "decide", &rep.Stopped); stop || err != nil {
		return rep, err
	}
	outcome, err := in.act(a.step, tr, *chosen, rep, a.texts)
	if err != nil {
		return rep, in.stepFailed("act", err)
	}
	if stop, err := in.interrupted(ctx, "act", &rep.Stopped); stop || err != nil {
		return rep, err
	}
	return rep, a.record(*chosen, outcome)
}

// actionRun is one action loop under way: what THINK gathered, which the
// later steps read.
type actionRun struct {
	in   *Instance
	ctx  context.Context // cancelled by Ctrl-C: checked between steps
	step context.Context // a step's calls and writes, which finish
	tr   trigger
	rep  *ActionReport

	snap  *snapshot
	parts *pieces
	vars  map[string]string
	texts *actTexts
	th    thought
}

// think runs THINK: it loads the instance, retrieves memories, checks
// every template the loop may fill in, asks the model for the situation
// and candidates, and records what it loaded and heard.
func (a *actionRun) think() error {
	in, tr, rep := a.in, a.tr, a.rep
	var err error
	if a.snap, err = in.snapshot(); err != nil {
		return in.stepFailed("think", err)
	}
	ret, err := in.mem.Retrieve(a.step, in.query(tr.text(), nil))
	if err != nil {
		return in.stepFailed("think", err)
	}
	rep.Notes = in.retrievalNotes(ret)
	skills, err := in.skillContext(a.step, tr.text())
	if err != nil {
		return in.stepFailed("think", err)
	}
	if a.parts, err = in.parts(); err != nil {
		return in.stepFailed("think", err)
	}
	vars := a.snap.vars(in.opts.Now())
	vars["trigger"] = tr.prompt(a.parts)
	vars["input"] = tr.external
	vars["conversation"] = in.formatConversation(a.parts)
	vars["memories"] = formatMemories(ret.Entries)
	vars["skills"] = skills.text
	a.vars = vars
	loopVars := slices.Collect(maps.Keys(vars))
	if a.texts, err = in.actTexts(loopVars); err != nil {
		return in.stepFailed("think", err)
	}
	decided := []string{"situation", "candidates"}
	if err := in.checkPrompts(loopVars, map[string][]string{"decide": decided,
		"record": append(decided, "action", "skill", "predicted", "counterfactual", "outcome")}); err != nil {
		return in.stepFailed("think", err)
	}
	if err := in.checkPrompts(nil, map[string][]string{stepTrigger: triggerVars}); err != nil {
		return in.stepFailed("think", err)
	}
	var thinkUsage Usage
	th, err := ask[thought](a.step, in, "think", vars, &thinkUsage)
	rep.Usage.Add(thinkUsage)
	if err != nil {
		return in.stepFailed("think", err)
	}
	a.th = th
	rep.Situation, rep.Candidates = th.Situation, th.Candidates
	var preds []string
	for i, c := range th.Candidates {
		preds = append(preds, fmt.Sprintf("#%d %s (skill %s) → predicted: %s", i+1, c.Action, c.Skill, c.Predicted))
	}
	m := memory.Memory{Author: memory.Kernel, Weight: initialWeight(memory.Kernel), Step: "think", Situation: "action loop: " + tr.describe(),
		Description: fmt.Sprintf("THINK: loaded soul.md, %d values, %d goals, %d memories (%s), %d exchanges of the conversation, %d skills in full. Situation: %s Candidates: %s",
			len(a.snap.values), len(a.snap.goals), len(ret.Entries), ret.Mode, len(in.conversationSnapshot()), len(skills.full), th.Situation, strings.Join(preds, "; ")),
		Used: ret.IDs()}
	if tr.externalID != "" && th.InputImportance != nil {
		m.Judged = map[string]float64{tr.externalID: clamp01(*th.InputImportance)}
	}
	_, err = in.write(m, map[string]any{"loop": LoopAction, "loaded": a.snap.loaded(len(ret.Entries)), "retrieval": ret.Mode,
		"recent": ret.Recent, "relevant": scoredIDs(ret.Relevant), "skills_in_full": skills.full, "skills_listed": skills.listed,
		"candidates": th.Candidates, "situation": th.Situation, "input_importance": th.InputImportance})
	return err
}

// decide runs DECIDE: the model's judgment, scored by the kernel (B=MAP).
// It returns the candidate to act on, or nil when the loop ends here (a
// skip, a gap, the gap reply to a waiting person).
func (a *actionRun) decide() (*Candidate, error) {
	in, tr, rep, th := a.in, a.tr, a.rep, a.th
	a.vars["situation"] = th.Situation
	a.vars["candidates"] = formatCandidates(a.parts, th.Candidates)
	var decideUsage Usage
	dec, err := ask[decision](a.step, in, "decide", a.vars, &decideUsage)
	rep.Usage.Add(decideUsage)
	if err != nil {
		return nil, in.stepFailed("decide", err)
	}
	sc := scoring{values: a.snap.values, goals: a.snap.goals, reactive: tr.goal == nil,
		available: func(name string) bool { return in.usable(a.step, name) }, now: in.opts.Now()}
	if sc.lastPursued, err = in.lastPursued(a.step); err != nil {
		return nil, in.stepFailed("decide", err)
	}
	v := sc.score(th.Candidates, dec)
	rep.Verdict = &v
	if err := in.logDecision(tr, v, dec); err != nil {
		return nil, err
	}
	switch v.Outcome {
	case OutcomeSkip:
		return nil, in.afterAction(a.ctx, "decide", tr, rep, nil)
	case OutcomeGap:
		if err := in.authorSkillGoal(th.Candidates[v.Chosen-1], v.Scores[v.Chosen-1], rep); err != nil {
			return nil, err
		}
		if tr.external == "" {
			return nil, in.afterAction(a.ctx, "decide", tr, rep, nil)
		}
		// A person is waiting: still answer them.
		if v.Fallback == 0 {
			return nil, in.gapReply(a.step, tr, th.Candidates[v.Chosen-1], rep, a.vars, a.texts)
		}
	}
	chosenN := v.Chosen
	if v.Outcome == OutcomeGap {
		chosenN = v.Fallback
	}
	chosen := th.Candidates[chosenN-1]
	score := v.Scores[chosenN-1]
	rep.Predicted = chosen.Predicted
	for _, g := range score.Goals {
		gw := 0.6
		if rec, ok := findGoal(a.snap.goals, g); ok {
			gw = rec.Weight
		}
		if _, err := in.write(memory.Memory{Author: memory.Goal, Weight: gw, Step: "decide", Situation: "action loop: " + tr.describe(),
			Description: fmt.Sprintf("Pursuing goal %q by %s (B=%.3f).", g, chosen.Action, score.B)},
			map[string]any{"goal": g, "action": chosen.Action}); err != nil {
			return nil, err
		}
	}
	return &chosen, nil
}

// record runs RECORD: the outcome against the prediction, the delta, and
// the changes the model asks for (each checked and logged).
func (a *actionRun) record(chosen Candidate, outcome string) error {
	in, tr, rep := a.in, a.tr, a.rep
	a.vars["action"] = chosen.Action
	a.vars["skill"] = chosen.Skill
	a.vars["predicted"] = chosen.Predicted
	a.vars["counterfactual"] = chosen.Counterfactual
	a.vars["outcome"] = outcome
	var recordUsage Usage
	rec, err := ask[recordAnswer](a.step, in, "record", a.vars, &recordUsage)
	rep.Usage.Add(recordUsage)
	if err != nil {
		return in.stepFailed("record", err)
	}
	rep.Outcome, rep.Delta = rec.Outcome, &rec.Delta
	if _, err := in.remember(memory.Kernel, "record", "action loop: "+tr.describe(),
		fmt.Sprintf("RECORD: did %q via %s. Predicted: %s Outcome: %s Delta %.2f: %s",
			chosen.Action, chosen.Skill, chosen.Predicted, rec.Outcome, rec.Delta, rec.DeltaExplanation),
		map[string]any{"loop": LoopAction, "action": chosen.Action, "skill": chosen.Skill, "predicted": chosen.Predicted,
			"outcome": rec.Outcome, "delta": rec.Delta, "delta_explanation": rec.DeltaExplanation}); err != nil {
		return err
	}
	for _, c := range rec.Changes {
		applied, refused, err := in.applyLogged(a.step, LoopAction, "record", c)
		if err != nil {
			return err
		}
		if applied != nil {
			rep.Applied = append(rep.Applied, *applied)
		}
		if refused != "" {
			rep.Refused = append(rep.Refused, refused)
		}
	}
	return in.afterAction(a.ctx, "record", tr, rep, &rec.Delta)
}

// query is what a loop step retrieves: the Recent latest experiential
// memories (self, goal, external: the kernel's audit lines never crowd
// them out) and the TopK most relevant to text among authors (all when
// nil). The memories the current turn wrote are no candidates for
// relevance: a person's question, stored before THINK reads it, is the
// best match for itself and would squeeze every other memory's relevance.
func (in *Instance) query(text string, authors []string) memory.Query {
	return memory.Query{Text: text, Recent: in.opts.Recent, TopK: in.opts.TopK, Authors: authors,
		RecentAuthors: []string{memory.Self, memory.Goal, memory.External}, Now: in.opts.Now(), Exclude: in.turnIDs()}
}

// retrievalNotes says, once per Instance, that relevance was ranked by
// full text because memories are still without an embedding: the person
// would otherwise wonder why the agent recalls less than it should.
func (in *Instance) retrievalNotes(ret *memory.Retrieval) []string {
	p := ret.Pending
	if p == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.toldPending {
		return nil
	}
	in.toldPending = true
	if p.Background {
		return []string{fmt.Sprintf("memory: %d memories have no embedding yet; they are being embedded in the background (%d done so far), "+
			"and until they all are, memories are recalled by the words they share with what you say", p.Total, p.Done)}
	}
	return []string{fmt.Sprintf("memory: %d memories have no embedding yet; memories are recalled by their words until a command that writes (chat, run) embeds them", p.Total)}
}

func scoredIDs(ss []memory.Scored) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

// gapReply answers a person when the action they need has no skill (A = 0)
// and no other candidate can act: the chat skill says so, in the words of
// prompts/decide/gap-reply.md.
func (in *Instance) gapReply(ctx context.Context, tr trigger, c Candidate, rep *ActionReport, vars map[string]string, texts *actTexts) error {
	vars["action"], vars["skill"], vars["goal"] = c.Action, c.Skill, rep.CreatedGoal
	msg, err := render("decide/gap-reply.md", texts.gapReply, vars)
	if err != nil {
		return in.stepFailed("act", err)
	}
	input, _ := json.Marshal(map[string]string{"message": strings.TrimSpace(msg)})
	reply := Candidate{Action: "tell the person the skill is missing", Skill: "chat", Input: input}
	if _, err := in.act(ctx, tr, reply, rep, texts); err != nil {
		return in.stepFailed("act", err)
	}
	return in.afterAction(ctx, "act", tr, rep, nil)
}

// applyLogged applies a change a loop step asked for and logs the result:
// the file change as a kernel memory, or a refusal (logged by apply), or
// why it could not be made. It returns the change made or the refusal; the
// error is only for a memory that could not be written.
func (in *Instance) applyLogged(ctx context.Context, loop, step string, c Change) (*AppliedChange, string, error) {
	applied, err := in.apply(ctx, loop, step, c)
	if refused, ok := err.(*RefusedError); ok {
		return nil, refused.Error(), nil
	}
	if err != nil {
		_, werr := in.remember(memory.Kernel, step, "change not applied", fmt.Sprintf("%s: change not applied: %v", strings.ToUpper(step), err),
			map[string]any{"change": c, "error": err.Error()})
		return nil, "", werr
	}
	_, werr := in.remember(memory.Kernel, step, "file modified", fmt.Sprintf("%s: %s in %s: %s → %s", strings.ToUpper(step), c, applied.File, applied.Before, applied.After),
		map[string]any{"loop": loop, "file": applied.File, "target": c.Target, "goal": goalKey(c), "change": c, "before": applied.Before, "after": applied.After})
	return applied, "", werr
}

func goalKey(c Change) string {
	if c.Target == "goal" {
		return c.Name
	}
	return ""
}

func (in *Instance) logDecision(tr trigger, v Verdict, dec decision) error {
	var scores []string
	for _, s := range v.Scores {
		scores = append(scores, s.String())
	}
	desc := fmt.Sprintf("DECIDE: %s: %s. Scores: %s.", v.Outcome, v.Reason, strings.Join(scores, "; "))
	if v.Outcome == OutcomeAct {
		s := v.Scores[v.Chosen-1]
		desc = fmt.Sprintf("DECIDE: chose #%d %q via %s, driven by values [%s] and goals [%s]; %s. Scores: %s. Rationale: %s",
			s.Candidate, s.Action, s.Skill, strings.Join(s.Values, ", "), strings.Join(s.Goals, ", "), v.Reason, strings.Join(scores, "; "), dec.Rationale)
	}
	_, err := in.remember(memory.Kernel, "decide", "action loop: "+tr.describe(), desc,
		map[string]any{"loop": LoopAction, "verdict": v, "preference": dec.Preference, "rationale": dec.Rationale})
	return err
}

// authorSkillGoal is DECIDE's rule for A = 0: the kernel creates a goal to
// author the missing skill, weighted by how much the action was wanted.
func (in *Instance) authorSkillGoal(c Candidate, s Score, rep *ActionReport) error {
	name := fmt.Sprintf("author skill %s: %s", c.Skill, c.Action)
	unlock, err := in.lockState()
	if err != nil {
		return err
	}
	defer unlock()
	goals, err := in.Goals()
	if err != nil {
		return err
	}
	for _, g := range goals {
		if strings.HasPrefix(g.Name, fmt.Sprintf("author skill %s:", c.Skill)) && g.Status != GoalDone {
			rep.CreatedGoal = g.Name
			_, err := in.remember(memory.Kernel, "decide", "ability gap",
				fmt.Sprintf("DECIDE: no skill %q ready (A=0); goal %q already exists, not created again", c.Skill, g.Name),
				map[string]any{"goal": g.Name, "skill": c.Skill})
			return err
		}
	}
	year := in.opts.Now().UTC().Year()
	gs, err := in.readGoalYear(year)
	if err != nil {
		return err
	}
	g := Goal{Name: name, Weight: clamp01(s.M), Status: GoalTodo}
	if err := in.writeGoalYear(year, append(gs, g)); err != nil {
		return err
	}
	rep.CreatedGoal = name
	_, err = in.remember(memory.Kernel, "decide", "ability gap",
		fmt.Sprintf("DECIDE: no skill %q ready for %q (A=0, M=%.2f): created goal %q (weight %.2f, todo) in data/goals/%d.json so a skill gets authored",
			c.Skill, c.Action, s.M, name, g.Weight, year),
		map[string]any{"goal": name, "skill": c.Skill, "file": fmt.Sprintf("data/goals/%d.json", year), "after": g})
	return err
}

func clamp01(x float64) float64 { return max(0, min(1, x)) }

// act invokes the chosen candidate's skill, or runs the create-skill tool.
func (in *Instance) act(ctx context.Context, tr trigger, c Candidate, rep *ActionReport, texts *actTexts) (string, error) {
	if c.Skill == skill.BuiltinCreate {
		return in.createSkill(ctx, tr, c, rep, texts)
	}
	said := texts.outcome
	res, what, err := in.invoke(ctx, c.Skill, c.Input, tr.describe())
	if err != nil {
		return "", err
	}
	rep.Skill = res
	// What RECORD and the reflection trigger read of the call.
	vars := map[string]string{"skill": c.Skill, "output": res.Output, "error": res.Error, "display": res.Display}
	outcome := said.fill("succeeded.md", vars)
	if !res.OK {
		outcome = said.fill("failed.md", vars)
	}
	if res.Display != "" {
		outcome += said.fill("shown.md", vars)
	}
	_, err = in.remember(memory.Kernel, "act", "action loop: "+tr.describe(),
		fmt.Sprintf("ACT: %s %s with %s in %s: %s", what, c.Skill, clip.Line(compactJSON(c.Input), 300), res.Duration.Round(time.Millisecond), clip.Line(outcome, 600)),
		map[string]any{"loop": LoopAction, "skill": c.Skill, "input": c.Input, "result": res})
	return outcome, err
}

// usable reports whether name is a ready skill or an MCP tool offered.
func (in *Instance) usable(ctx context.Context, name string) bool {
	_, tool := in.mcp.handler(name)
	return tool || in.skills.Ready(ctx, name)
}

// invoke runs the skill name, or the MCP tool of that name; what says
// which, for the step's memory.
func (in *Instance) invoke(ctx context.Context, name string, input json.RawMessage, situation string) (res *skill.Result, what string, err error) {
	if h, ok := in.mcp.handler(name); ok {
		return in.callMCP(ctx, h, input), "called MCP tool", nil
	}
	if _, err := in.skills.Help(ctx, name); err != nil {
		return nil, "", err
	}
	res, err = in.skills.Invoke(ctx, name, skill.Request{Input: input, Situation: situation})
	return res, "invoked skill", err
}

// createSkill runs the create-skill tool loop: the LLM writes a new skill,
// or a new version of one, through the create_skill tool; the kernel
// writes it, runs its --help and only then makes it the current version.
func (in *Instance) createSkill(ctx context.Context, tr trigger, c Candidate, rep *ActionReport, texts *actTexts) (string, error) {
	skills, err := in.skillContext(ctx, c.Action+" "+compactJSON(c.Input))
	if err != nil {
		return "", err
	}
	snap, err := in.snapshot()
	if err != nil {
		return "", err
	}
	parts, err := in.parts()
	if err != nil {
		return "", err
	}
	vars := snap.vars(in.opts.Now())
	// The names of createSkillPrompt, checked before THINK.
	vars["trigger"], vars["action"], vars["input"], vars["skills"] = tr.prompt(parts), c.Action, compactJSON(c.Input), skills.text
	sys, user, err := in.prompt("create-skill", vars)
	if err != nil {
		return "", err
	}
	said := texts.create
	schema, err := llm.SchemaFor[skill.NewSkill]()
	if err != nil {
		return "", err
	}
	req, err := in.request("create-skill", sys, user)
	if err != nil {
		return "", err
	}
	var outcomes []string
	var logErr error
	loop := &llm.Loop{Client: in.opts.Client, MaxLoops: 6, Handlers: []llm.ToolHandler{{
		Tool: llm.Tool{Name: "create_skill", Description: texts.tool, InputSchema: schema.JSON},
		Run: func(ctx context.Context, input json.RawMessage) (llm.ToolOutput, error) {
			var spec skill.NewSkill
			_, problems := schema.Check(string(input))
			if problems == nil {
				if err := json.Unmarshal(input, &spec); err != nil {
					problems = []string{err.Error()}
				}
			}
			if problems != nil {
				return llm.ErrorOutput(said.fill("tool-bad-input.md", map[string]string{"problems": strings.Join(problems, "; ")})), nil
			}
			made, err := in.skills.Create(ctx, spec)
			var files []string
			for f := range spec.Files {
				files = append(files, f)
			}
			if err != nil {
				_, logErr = in.remember(memory.Kernel, "act", "create-skill", fmt.Sprintf("ACT: create-skill %q refused: %v", spec.Name, err),
					map[string]any{"skill": spec.Name, "revise": spec.Revise, "files": files, "error": err.Error()})
				return llm.ErrorOutput(err.Error()), nil
			}
			rep.Created = append(rep.Created, spec.Name)
			piece := map[string]string{"skill": spec.Name, "version": shortVersion(made.Version), "replaced": shortVersion(made.Replaced), "help": made.Help}
			file := "created.md"
			if made.Replaced != "" {
				file = "revised.md"
			}
			what := said.fill(file, piece)
			piece["what"] = what
			outcomes = append(outcomes, said.fill("outcome.md", piece))
			_, logErr = in.remember(memory.Kernel, "act", "create-skill",
				fmt.Sprintf("ACT: create-skill %s (%s) and read its --help: %s", what, strings.Join(files, ", "), clip.Line(made.Help, 400)),
				map[string]any{"loop": LoopAction, "skill": spec.Name, "description": spec.Description, "files": files, "help": made.Help,
					"version": made.Version, "replaced": made.Replaced})
			return llm.TextOutput(said.fill("tool-result.md", piece)), nil
		},
	}}}
	callCtx, done := in.callContext(ctx)
	res, err := loop.Run(callCtx, req)
	done()
	if res != nil {
		in.charge("create-skill", res.Calls, &rep.Usage)
	}
	if err != nil {
		return "", err
	}
	if logErr != nil {
		return "", logErr
	}
	if len(outcomes) == 0 {
		return said.fill("none.md", map[string]string{"said": clip.Line(res.Text(), 400)}), nil
	}
	return strings.Join(outcomes, "; "), nil
}

func shortVersion(v string) string {
	if len(v) > 12 {
		return v[:12]
	}
	return v
}

// lastPursued maps each goal (lower-cased) to the last time a goal memory
// named it: each goal's own last pursuit, however long ago.
func (in *Instance) lastPursued(ctx context.Context) (map[string]time.Time, error) {
	marks, err := in.mem.GoalMarks(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]time.Time{}
	for goal, m := range marks {
		if !m.Pursued.IsZero() {
			out[goal] = m.Pursued
		}
	}
	return out, nil
}
