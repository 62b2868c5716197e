package lumen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/lumen/memory"
	"github.com/llmkernels/kernels/lumen/skill"
)

// Record is a memory as it was written, told to Instance observers (lumen
// run prints one line per kernel step from them).
type Record struct {
	ID string
	memory.Memory
}

// charge adds what step's calls cost to u, to this instance's total, and
// to the spend the next memory line records; it notes which model answered
// and tells Options.OnCall of each call.
func (in *Instance) charge(step string, calls []*llm.Call, u *Usage) {
	var cost Usage
	for _, c := range calls {
		one := callUsage(c)
		if in.opts.Client.Scripted {
			one.ScriptedUSD = one.CostUSD
		}
		cost.Add(one)
		if in.opts.OnCall != nil {
			in.opts.OnCall(CallReport{Step: step, Model: c.Model, Usage: one, Latency: c.Latency})
		}
	}
	if u != nil {
		u.Add(cost)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.pending.Add(cost)
	in.spent.Add(cost)
	in.unsettled = max(0, in.unsettled-cost.CostUSD)
	if n := len(calls); n > 0 && calls[n-1].Model != "" {
		in.model = calls[n-1].Model
	}
}

// callContext is ctx for a step's model calls. During a chat turn the
// calls also end when the turn's context does: Ctrl-C stops the answer
// under way at once, and nothing of it is kept. Elsewhere a call, once
// begun, finishes (lumen run stops between steps). done releases it.
func (in *Instance) callContext(ctx context.Context) (c context.Context, done func()) {
	turn := in.chatCtx
	if turn == nil {
		return ctx, func() {}
	}
	c, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(turn, func() { cancel(context.Cause(turn)) })
	return c, func() { stop(); cancel(nil) }
}

// Spent is what every LLM call this Instance made cost.
func (in *Instance) Spent() Usage {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.spent
}

// spentSince is what the calls made since Spent returned base cost.
func (in *Instance) spentSince(base Usage) Usage {
	return in.Spent().Sub(base)
}

// currentModel is the model that last answered, else the one configured.
// The caller holds in.mu or is the only goroutine using the instance.
func (in *Instance) currentModel() string {
	if in.model != "" {
		return in.model
	}
	return in.opts.Model
}

// modelName is the provider and model recorded on memories: the model
// that last answered, else the one configured; "" without an LLM.
func (in *Instance) modelName() string {
	if in.opts.Client == nil {
		return ""
	}
	model := in.currentModel()
	provider := in.opts.Provider
	if provider == "" {
		provider = "llm"
	}
	return provider + "/" + model
}

// Initial weights of new memories, by author, when the model judged none.
func initialWeight(author string) float64 {
	switch author {
	case memory.External:
		return 0.8
	case memory.Self:
		return 0.7
	case memory.Goal:
		return 0.6
	}
	return 0.3
}

// importance is the weight a memory is written with: the model's judgment
// when it gave one, else the author's default.
func importance(judged *float64, author string) float64 {
	if judged != nil && *judged >= 0 && *judged <= 1 {
		return *judged
	}
	return initialWeight(author)
}

// remember appends a memory; data (any JSON-able value) goes in its data
// field. The kernel cannot skip these: a failed write fails the step.
func (in *Instance) remember(author, step, situation, description string, data any) (string, error) {
	return in.write(memory.Memory{Author: author, Weight: initialWeight(author), Step: step, Situation: situation, Description: description}, data)
}

// rememberUsed is remember for a step that used the memories in used:
// writing it strengthens them.
func (in *Instance) rememberUsed(author, step, situation, description string, data any, used []string) (string, error) {
	return in.write(memory.Memory{Author: author, Weight: initialWeight(author), Step: step, Situation: situation,
		Description: description, Used: used}, data)
}

// write appends m (timestamp now; data encoded into m.Data) with the
// model that wrote its content and the LLM spend not yet recorded, then
// tells the observer.
func (in *Instance) write(m memory.Memory, data any) (string, error) {
	m.Timestamp = in.opts.Now()
	if data != nil {
		raw, err := json.Marshal(data)
		if err != nil {
			return "", fmt.Errorf("memory data for step %s: %w", m.Step, err)
		}
		m.Data = raw
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if m.Author != memory.External {
		m.Model = in.modelName()
	}
	if !in.pending.Zero() {
		u := in.pending
		m.Usage = &u
	}
	id, err := in.mem.Append(m)
	if err != nil {
		return "", err
	}
	in.pending = Usage{}
	in.turn = append(in.turn, id)
	if in.observe != nil {
		in.observe(Record{ID: id, Memory: m})
	}
	return id, nil
}

// beginTurn starts a turn: a chat input, a goal pursued, an explore or a
// reflection. What it writes from now on is the turn's own (turnIDs).
func (in *Instance) beginTurn() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.turn = nil
}

// turnIDs are the ids of the memories the current turn wrote so far.
func (in *Instance) turnIDs() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]string(nil), in.turn...)
}

// logErr records a failed step as a kernel memory and returns err, with
// the recording's own failure joined to it.
func (in *Instance) logErr(step string, err error) error {
	if _, werr := in.remember(memory.Kernel, step, "step failed", fmt.Sprintf("%s failed: %v", strings.ToUpper(step), err),
		map[string]any{"error": err.Error()}); werr != nil {
		return errors.Join(err, fmt.Errorf("recording that %s failed: %w", step, werr))
	}
	return err
}

// skillChecked records a --help run: it happens once per skill version,
// and a failure is why the skill is not an ability (A = 0) until it
// changes.
func (in *Instance) skillChecked(c skill.Check) {
	desc := fmt.Sprintf("SKILL CHECK: %s version %s: --help passed", c.Name, shortVersion(c.Version))
	data := map[string]any{"skill": c.Name, "version": c.Version, "ok": c.OK}
	if !c.OK {
		desc = fmt.Sprintf("SKILL CHECK: %s version %s: --help failed, so it is not an ability (A=0) until it changes: %s", c.Name, shortVersion(c.Version), c.Error)
		data["error"] = c.Error
	}
	if _, err := in.remember(memory.Kernel, "skill-check", "skills", desc, data); err != nil {
		in.opts.Logger.Warn("could not record a skill check", "skill", c.Name, "err", err)
	}
}
