package lumen

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/lumen/memory"
	"github.com/llmkernels/kernels/lumen/skill"
)

// placeholderRE matches {{name}} and {{name|text}}: text stands in when
// the variable is empty, so what the LLM reads about an empty value lives
// in the template too.
var placeholderRE = regexp.MustCompile(`\{\{\s*([a-z_]+)\s*(?:\|([^}]*))?\}\}`)

// template reads prompts/<step>/<file> from the instance; a file the user
// deleted falls back to the built-in default, with a warning.
func (in *Instance) template(step, file string) (string, error) {
	path := filepath.Join(in.Root, "prompts", step, file)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		data, err = fs.ReadFile(defaults, "prompts/"+step+"/"+file)
		if err == nil {
			in.opts.Logger.Warn("prompt template missing from the instance: using the built-in default", "path", path)
		}
	}
	if err != nil {
		return "", fmt.Errorf("prompt %s/%s: %w", step, file, err)
	}
	return string(data), nil
}

// render substitutes {{name}} with vars[name], and {{name|text}} with
// text when vars[name] is empty. A name the step does not provide is an
// error naming the template and the names it may use.
func render(where, tmpl string, vars map[string]string) (string, error) {
	var missing []string
	out := placeholderRE.ReplaceAllStringFunc(tmpl, func(m string) string {
		sub := placeholderRE.FindStringSubmatch(m)
		v, ok := vars[sub[1]]
		if !ok {
			missing = append(missing, sub[1])
			return m
		}
		if strings.TrimSpace(v) == "" && sub[2] != "" {
			return sub[2]
		}
		return v
	})
	if len(missing) > 0 {
		var names []string
		for _, k := range slices.Sorted(maps.Keys(vars)) {
			names = append(names, "{{"+k+"}}")
		}
		return "", fmt.Errorf("prompt %s uses {{%s}}, which this step does not provide; it may use %s", where, strings.Join(missing, "}}, {{"), strings.Join(names, " "))
	}
	return out, nil
}

// pieces are the templates of one prompts/ directory that the kernel
// fills in while it acts: outcomes, tool results, the JSON instruction.
// They are loaded and checked together before the kernel acts, so a
// template naming a variable it does not provide fails the step before
// anything is done or paid for, not halfway through.
type pieces struct {
	dir  string
	vars map[string][]string // file -> the variables it may use
	tmpl map[string]string
}

// pieces loads prompts/<dir>/<file> for each file of vars, checking that
// each uses only its variables. A file's final newlines are not part of
// its text (editors add one), so a piece can be joined to another.
func (in *Instance) pieces(dir string, vars map[string][]string) (*pieces, error) {
	p := &pieces{dir: dir, vars: vars, tmpl: map[string]string{}}
	for file, names := range vars {
		t, err := in.template(dir, file)
		if err != nil {
			return nil, err
		}
		t = strings.TrimRight(t, "\n")
		if dir == "parts" {
			t = dropOwnQuotes(t, quotedVars[file])
		}
		if _, err := render(dir+"/"+file, t, probe(names)); err != nil {
			return nil, err
		}
		p.tmpl[file] = t
	}
	return p, nil
}

// fill renders file with vars. It cannot fail: the template was checked
// against the variable names given to pieces, and a name missing from vars
// renders empty.
func (p *pieces) fill(file string, vars map[string]string) string {
	all := map[string]string{}
	for _, n := range p.vars[file] {
		all[n] = vars[n]
	}
	out, _ := render(p.dir+"/"+file, p.tmpl[file], all)
	return out
}

// partVars are the files of prompts/parts/, each the text of one item of a
// list the kernel puts into a step's variable (a candidate, a tension, a
// line of the conversation...), with the variables each may use. Numbers
// are formatted by the kernel (two decimals for weights and strengths).
var partVars = map[string][]string{
	"trigger-input.md": {"input"},
	"trigger-goal.md":  {"goal", "weight", "status"},
	"person.md":        {"time", "input"},
	"you.md":           {"time", "reply"},
	"candidate.md":     {"number", "action", "skill", "input", "predicted", "counterfactual"},
	"tension.md":       {"number", "description", "strength"},
	"evidence.md":      {"evidence"},
	"proposal.md":      {"number", "change", "tension", "strength", "rationale"},
	"delta.md":         {"time", "action", "predicted", "outcome", "delta", "explanation"},
	"conflict.md":      {"time", "detail"},
}

func (in *Instance) parts() (*pieces, error) { return in.pieces("parts", partVars) }

// quotedVars are the variables of prompts/parts/ the kernel fills in
// already quoted (quote), as the Go text before the templates did.
var quotedVars = map[string][]string{
	"trigger-goal.md": {"goal"},
	"delta.md":        {"action", "predicted", "outcome"},
}

// dropOwnQuotes turns "{{name}}" into {{name}} for each quoted variable:
// a template edited from the wording of before, which put the quotes
// around the variable itself, would otherwise show them twice.
func dropOwnQuotes(t string, names []string) string {
	for _, n := range names {
		t = strings.ReplaceAll(t, `"{{`+n+`}}"`, `{{`+n+`}}`)
	}
	return t
}

// item renders one item of a listed variable from prompts/parts/. Its
// values are folded onto one line first, so text the model or a person
// wrote (an action, a tension, an explanation) cannot start an item of its
// own, such as a second delta line in REVIEW's prompt. A value without a
// line break is passed unchanged, so the wording is the kernel's of before
// the text moved into templates. Values the kernel used to quote (%q) are
// quoted by the caller, with quote, and the templates carry no quotes of
// their own.
func (p *pieces) item(file string, vars map[string]string) string {
	flat := make(map[string]string, len(vars))
	for k, v := range vars {
		flat[k] = oneLine(v)
	}
	return p.fill(file, flat)
}

// oneLine folds every run of white space in s into one space when s holds
// a line break (any Unicode one); text without one is returned unchanged.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\n\v\f\r\u0085\u2028\u2029") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// quote is how the kernel quotes a value inside a part: Go syntax, with
// its own quotes, so no line break or quote in it survives unescaped.
func quote(s string) string { return strconv.Quote(s) }

// actTexts are the templates ACT fills in besides the steps' own: a skill
// call's outcome (prompts/act/), the create-skill step's prompts and its
// tool's description, replies and outcomes (prompts/create-skill/), and
// the reply when no skill can do what a person asked
// (prompts/decide/gap-reply.md). The action loop loads and checks them
// before THINK, with prompts/parts/, so a broken one fails the loop before
// any call is paid for or any skill runs, not after THINK and DECIDE.
type actTexts struct {
	outcome  *pieces // prompts/act/
	create   *pieces // prompts/create-skill/: the tool's replies, the step's outcome
	tool     string  // prompts/create-skill/tool.md
	gapReply string  // prompts/decide/gap-reply.md
}

// actVars and createSkillVars are the files of prompts/act/ and
// prompts/create-skill/ that the kernel fills in, with their variables.
var (
	actVars = map[string][]string{"succeeded.md": {"skill", "output"}, "failed.md": {"skill", "error"}, "shown.md": {"skill", "display"}}

	createSkillVars = map[string][]string{
		"created.md": {"skill", "version", "replaced", "help"}, "revised.md": {"skill", "version", "replaced", "help"},
		"outcome.md": {"what", "skill", "help"}, "tool-result.md": {"what", "skill", "help"},
		"tool-bad-input.md": {"problems"}, "none.md": {"said"},
	}
)

// createSkillPrompt are the variables the create-skill step's prompts get
// besides the snapshot's (now, soul, values, goals).
var createSkillPrompt = []string{"trigger", "action", "input", "skills"}

// actTexts loads and checks the templates ACT uses. loop names the
// variables THINK has: gap-reply.md gets them, with those DECIDE adds.
func (in *Instance) actTexts(loop []string) (*actTexts, error) {
	t := &actTexts{}
	var err error
	if t.outcome, err = in.pieces("act", actVars); err != nil {
		return nil, err
	}
	if t.create, err = in.pieces("create-skill", createSkillVars); err != nil {
		return nil, err
	}
	if t.tool, err = in.template("create-skill", "tool.md"); err != nil {
		return nil, err
	}
	t.tool = strings.TrimSpace(t.tool)
	if _, _, err := in.prompt("create-skill", probe(slices.Collect(maps.Keys((&snapshot{}).vars(time.Time{}))), createSkillPrompt...)); err != nil {
		return nil, err
	}
	if t.gapReply, err = in.template("decide", "gap-reply.md"); err != nil {
		return nil, err
	}
	if _, err := render("decide/gap-reply.md", t.gapReply, probe(loop, "situation", "candidates", "action", "skill", "goal")); err != nil {
		return nil, err
	}
	return t, nil
}

// checkPrompts checks the prompts of the steps a loop reaches later
// (step -> the variables it gets besides loop), so a broken one fails the
// loop before its first call, not once the calls before it were paid for.
func (in *Instance) checkPrompts(loop []string, later map[string][]string) error {
	for _, step := range slices.Sorted(maps.Keys(later)) {
		if _, _, err := in.prompt(step, probe(loop, later[step]...)); err != nil {
			return err
		}
	}
	return nil
}

// probe is a value for each name, to check which variables a template
// uses before the real values exist.
func probe(names []string, more ...string) map[string]string {
	vars := map[string]string{}
	for _, n := range append(slices.Clone(names), more...) {
		vars[n] = "x"
	}
	return vars
}

// prompt renders a step's system and user prompt.
func (in *Instance) prompt(step string, vars map[string]string) (string, string, error) {
	sys, err := in.template(step, "system.md")
	if err != nil {
		return "", "", err
	}
	user, err := in.template(step, "prompt.md")
	if err != nil {
		return "", "", err
	}
	if sys, err = render(step+"/system.md", sys, vars); err != nil {
		return "", "", err
	}
	if user, err = render(step+"/prompt.md", user, vars); err != nil {
		return "", "", err
	}
	if err := notBlank(step+"/system.md", sys, "system prompt"); err != nil {
		return "", "", err
	}
	if err := notBlank(step+"/prompt.md", user, "message"); err != nil {
		return "", "", err
	}
	return sys, user, nil
}

// notBlank fails a template whose text is a whole system block or message
// of its own when it holds nothing but white space: the API refuses a
// blank one, and the step would fail only once the call was made (for the
// re-ask, after the malformed answer was paid for). A deleted file is the
// way back to the default; a blank one is not taken to mean it, because
// the model would then read text the user removed.
func notBlank(where, text, what string) error {
	if strings.TrimSpace(text) != "" {
		return nil
	}
	return fmt.Errorf("prompt %s is blank: it would be an empty %s, which the API refuses; write its text, or delete the file to use the built-in default", where, what)
}

// Usage is what LLM calls cost: calls, tokens and US dollars.
type Usage = memory.Usage

// callUsage is what one call cost.
func callUsage(c *llm.Call) Usage {
	return Usage{Calls: 1, InputTokens: c.Usage.PromptTokens(), OutputTokens: c.Usage.OutputTokens,
		CacheReadTokens: c.Usage.CacheReadInputTokens, CacheWriteTokens: c.Usage.CacheCreationInputTokens, CostUSD: c.CostUSD}
}

// errNoClient is the loops' error without a model to call.
var errNoClient = option.Errorf("client", "is not set: the loops call a model (docs/configuration.md)")

// request is a step's request. Its system prompt begins with the
// instance block (instanceBlock), the same bytes in every step, then the
// step's own instructions; each ends at a 1-hour cache breakpoint, so
// every step reads the first from the prompt cache, and a step run again
// within the hour (a repair, the next turn or cycle) reads both. What
// changes from call to call (the time, the trigger, memories) is in the
// message, after them.
func (in *Instance) request(step, system, user string) (*llm.Request, error) {
	if in.opts.Client == nil {
		return nil, errNoClient
	}
	self, err := in.instanceBlock()
	if err != nil {
		return nil, err
	}
	req := &llm.Request{
		Model:     in.opts.Model,
		MaxTokens: in.opts.MaxTokens,
		System:    []llm.SystemBlock{self, {Type: llm.BlockText, Text: system, CacheControl: llm.EphemeralTTL("1h")}},
		Messages:  []llm.Message{llm.UserText(user)},
	}
	if on := in.opts.OnProgress; on != nil {
		req.OnDelta = func(d llm.Delta) { on(Progress{Step: step, Delta: d}) }
	}
	return req, nil
}

// instanceBlock is who the agent is, from prompts/instance/system.md:
// soul, values, goals and the skills index. It holds nothing that changes
// between calls unless the agent itself changes (no time, no trigger), so
// it stays byte-identical across steps and cycles.
func (in *Instance) instanceBlock() (llm.SystemBlock, error) {
	snap, err := in.snapshot()
	if err != nil {
		return llm.SystemBlock{}, err
	}
	index, err := in.skillsIndex()
	if err != nil {
		return llm.SystemBlock{}, err
	}
	tmpl, err := in.template("instance", "system.md")
	if err != nil {
		return llm.SystemBlock{}, err
	}
	vars := map[string]string{"soul": formatSoul(snap.soul), "values": formatValues(snap.values), "goals": formatGoals(snap.goals), "skills_index": index}
	text, err := render("instance/system.md", tmpl, vars)
	if err != nil {
		return llm.SystemBlock{}, err
	}
	if err := notBlank("instance/system.md", text, "system prompt"); err != nil {
		return llm.SystemBlock{}, err
	}
	// An hour's lifetime, for the step's block too: lumen run waits five
	// minutes between cycles by default, longer than the 5-minute cache
	// keeps a prefix, and a write for an hour (2× an input token) is
	// repaid by the second cycle that reads it (0.1×) instead of writing
	// it again (1.25×).
	return llm.SystemBlock{Type: llm.BlockText, Text: text, CacheControl: llm.EphemeralTTL("1h")}, nil
}

// skillsIndex lists the skills, one line each: the name, and the first
// line of its --help when a check of its current version passed (nothing
// is run to learn it).
func (in *Instance) skillsIndex() (string, error) {
	list, err := in.skills.List()
	if err != nil {
		return "", err
	}
	var lines []string
	for _, s := range list {
		if !s.HasMain {
			continue
		}
		line := "- " + oneLine(s.Name)
		if c, err := in.skills.Cached(s.Name); err == nil && c.OK {
			first, _, _ := strings.Cut(strings.TrimSpace(c.Help), "\n")
			if first = strings.TrimSpace(strings.TrimPrefix(first, s.Name+":")); first != "" {
				line += ": " + oneLine(clip.Line(first, 200))
			}
		}
		lines = append(lines, line)
	}
	lines = append(lines, "- "+skill.BuiltinCreate+": built in: author or revise a skill")
	return strings.Join(lines, "\n"), nil
}

// Progress is a piece of a step's answer as it arrives: the step (think,
// decide, record, …) and the piece (text, thinking, tool input; a
// restart when a broken answer is asked for again).
type Progress struct {
	Step  string
	Delta llm.Delta
}

// CallReport is one model call a step made, told to Options.OnCall as it
// is answered.
type CallReport struct {
	Step    string        `json:"step"`
	Model   string        `json:"model"`
	Usage   Usage         `json:"usage"`
	Latency time.Duration `json:"latency"`
}

// Text is the call's line: "think claude-sonnet-4-5: 1.2k→56 tokens, cost
// $0.0123, 84% of input from cache, 2.1s".
func (c CallReport) Text() string {
	return fmt.Sprintf("%s %s: %s→%s tokens, %s, %.1fs", c.Step, c.Model, kilo(c.Usage.InputTokens), kilo(c.Usage.OutputTokens),
		llm.CostLine(c.Usage.CostUSD, callsUsage(c.Usage)), c.Latency.Seconds())
}

// ask runs one step as a structured-output call: the step's prompts with
// vars, the answer parsed into T (malformed JSON is sent back for repair).
// What the calls cost is added to u and to the spend the next memory line
// records, failed attempts included.
func ask[T any](ctx context.Context, in *Instance, step string, vars map[string]string, u *Usage) (T, error) {
	var zero T
	sys, user, err := in.prompt(step, vars)
	if err != nil {
		return zero, err
	}
	req, err := in.request(step, sys, user)
	if err != nil {
		return zero, err
	}
	opts, err := in.jsonOptions()
	if err != nil {
		return zero, fmt.Errorf("step %s: %w", step, err)
	}
	ctx, done := in.callContext(ctx)
	v, calls, err := llm.AskJSON[T](ctx, in.opts.Client, req, opts)
	done()
	in.charge(step, calls, u)
	if err != nil {
		return zero, fmt.Errorf("step %s: %w", step, err)
	}
	return v, nil
}

// jsonOptions words the structured-output call from the instance's
// prompts/json/instruction.md ({{schema}}: the JSON Schema document the
// answer is checked against) and prompts/json/repair.md ({{problems}}: what
// was wrong, one "- " line each), so this text is as editable as every
// other prompt. Both are checked before the call, blank ones refused. The schema
// itself and the problem lines stay in Go: the schema is what the answer
// is validated against, and the problems are the validator's findings.
func (in *Instance) jsonOptions() (llm.JSONOptions, error) {
	p, err := in.pieces("json", map[string][]string{"instruction.md": {"schema"}, "repair.md": {"problems"}})
	if err != nil {
		return llm.JSONOptions{}, err
	}
	if err := notBlank("json/instruction.md", p.tmpl["instruction.md"], "system prompt block"); err != nil {
		return llm.JSONOptions{}, err
	}
	if err := notBlank("json/repair.md", p.tmpl["repair.md"], "message"); err != nil {
		return llm.JSONOptions{}, err
	}
	return llm.JSONOptions{
		Instruction: func(schema string) string {
			return p.fill("instruction.md", map[string]string{"schema": schema})
		},
		Repair: func(problems []string) string {
			return p.fill("repair.md", map[string]string{"problems": "- " + strings.Join(problems, "\n- ")})
		},
	}, nil
}
