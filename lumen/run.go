package lumen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/lumen/memory"
)

// CycleReport is what one cycle of lumen run did.
type CycleReport struct {
	N           int                `json:"n"`
	Loop        string             `json:"loop"` // action or explore
	Started     time.Time          `json:"started"`
	Duration    time.Duration      `json:"duration"`
	Usage       Usage              `json:"usage"` // every LLM call of the cycle
	Idle        string             `json:"idle,omitempty"`
	Action      *ActionReport      `json:"action,omitempty"`
	Explore     *ExploreReport     `json:"explore,omitempty"`
	Maintenance *MaintenanceReport `json:"maintenance,omitempty"`
	// Failed is why the cycle failed; the run goes on after a back-off.
	Failed  string        `json:"failed,omitempty"`
	Backoff time.Duration `json:"backoff,omitempty"`
}

// RunOptions control lumen run. Zero fields mean no limit, or the default;
// Run refuses a negative one (or a cap that is not a number) as an
// *OptionError before it starts (Check).
type RunOptions struct {
	Cycles   int           // stop after this many cycles
	Interval time.Duration // wait between cycles (the loop timer); 0 goes back to back
	For      time.Duration // stop once this much time has passed
	// MaxCost stops the run once its LLM calls cost this many US dollars;
	// MaxCostDay once the calls recorded in memory today (UTC; every
	// process, this run included) cost this much. Both are checked before
	// every call, so the call under way can pass a cap by its own cost.
	MaxCost    float64
	MaxCostDay float64
	// NoReflect turns the reflection loop off for the run (the reflexivity
	// ablation); the cycles and trigger memories record it.
	NoReflect bool
	// Backoff is the wait after a failed cycle, doubling with each failure
	// in a row up to MaxBackoff; defaults 30s and 30m. A success resets it.
	Backoff, MaxBackoff time.Duration
	OnCycle             func(*CycleReport)
	// OnWait is told, before each wait between cycles, when the next
	// cycle is due.
	OnWait func(next time.Time)
	// OnStep is told of every memory the run writes, as it is written.
	OnStep func(Record)
}

// Why a run stopped.
const (
	StopCycles      = "cycles"        // --cycles reached
	StopInterrupted = "interrupted"   // Ctrl-C or SIGTERM
	StopTimeLimit   = "time limit"    // --for reached
	StopRunCost     = "run spend cap" // --max-cost reached
	StopDayCost     = "day spend cap" // --max-cost-day reached
	// StopFailed: a cycle failed and not even its failure could be written
	// (a full disk): Run returns an error with it.
	StopFailed = "failed"
)

// RunReport sums up a run.
type RunReport struct {
	Started  time.Time      `json:"started"`
	Elapsed  time.Duration  `json:"elapsed"`
	Cycles   int            `json:"cycles"`
	ByLoop   map[string]int `json:"by_loop"`
	Idle     int            `json:"idle"`
	Failed   int            `json:"failed"`
	Usage    Usage          `json:"usage"`
	SpentDay float64        `json:"spent_today_usd"` // recorded in memory today, every process
	Stopped  string         `json:"stopped"`         // one of the Stop constants
	Detail   string         `json:"detail,omitempty"`
	// CostNote says what the run's money is when its calls were
	// scripted (llm.ScriptedNote): what they would have cost, nothing
	// charged; "" for a real provider.
	CostNote string `json:"cost_note,omitempty"`
}

// Limited reports whether the run stopped before its natural end: a
// signal, a time limit or a spend cap (it can be resumed by running again).
func (r *RunReport) Limited() bool { return r.Stopped != StopCycles }

// ErrSpendCap is wrapped by the error of an LLM call refused because a
// spend cap was reached.
var ErrSpendCap = errors.New("spend cap reached")

type capError struct {
	which string // StopRunCost or StopDayCost
	msg   string
}

func (e *capError) Error() string { return e.msg }
func (e *capError) Unwrap() error { return ErrSpendCap }

// capped is a provider that refuses a request once a spend cap is reached.
type capped struct {
	llm.Provider
	check func() error
}

// Betas are the wrapped provider's (llm.ProviderBetas).
func (c capped) Betas() []string { return llm.ProviderBetas(c.Provider) }

func (c capped) Messages(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.Provider.Messages(ctx, req)
}

// Run runs the internal loop until it is stopped: by ctx (Ctrl-C, SIGTERM),
// Cycles, For, or a spend cap. Each cycle is an action loop (pursue the
// highest-weight active goal) or an explore loop, alternating (the first
// cycle continues the alternation recorded in memory); the reflection
// trigger is checked after every action loop, and maintenance runs after
// every cycle when due. A cycle that fails (a skill, a malformed answer,
// an unreachable provider) is recorded as a kernel memory and the loop
// goes on after a back-off that grows while failures repeat. When ctx is
// cancelled, the step under way finishes first.
func (in *Instance) Run(ctx context.Context, ro RunOptions) (*RunReport, error) {
	if err := ro.Check(); err != nil {
		return nil, err
	}
	if err := in.writable(); err != nil {
		return nil, err
	}
	if in.opts.Client == nil {
		return nil, errNoClient
	}
	if err := in.capsCountable(ro); err != nil {
		return nil, err
	}
	if ro.Backoff <= 0 {
		ro.Backoff = 30 * time.Second
	}
	if ro.MaxBackoff <= 0 {
		ro.MaxBackoff = 30 * time.Minute
	}
	r := &runState{in: in, ctx: ctx, ro: ro, rep: &RunReport{Started: in.opts.Now(), ByLoop: map[string]int{}}, start: time.Now(), base: in.Spent()}
	defer in.runClient(ctx, ro, r.base)()
	in.observe, in.noReflect = ro.OnStep, ro.NoReflect
	defer func() { in.observe, in.noReflect = nil, false }()
	for n := 1; ro.Cycles <= 0 || n <= ro.Cycles; n++ {
		if ctx.Err() != nil {
			return r.interrupted()
		}
		if ro.For > 0 && time.Since(r.start) >= ro.For {
			return r.finish(StopTimeLimit, fmt.Sprintf("ran for %s", ro.For))
		}
		if err := in.checkCaps(ctx, ro, r.base); err != nil {
			var ce *capError
			errors.As(err, &ce)
			return r.finish(ce.which, err.Error())
		}
		if stop, rep, err := r.cycle(n); stop {
			return rep, err
		}
		if ro.Cycles > 0 && n >= ro.Cycles {
			break
		}
		pause := ro.Interval
		if r.last.Failed != "" {
			pause = max(pause, r.last.Backoff)
		}
		if ro.OnWait != nil && pause > 0 {
			ro.OnWait(in.opts.Now().Add(pause))
		}
		if why, ok := r.wait(pause); !ok {
			if why == StopInterrupted {
				return r.interrupted()
			}
			return r.finish(why, "")
		}
	}
	return r.finish(StopCycles, fmt.Sprintf("%d cycles", ro.Cycles))
}

// runClient gives the instance, for the run, a client that refuses a call
// once a spend cap is reached and counts each answer toward the caps the
// moment it arrives (a step's repair attempts and the create-skill loop
// make several calls before the step charges them all). The function it
// returns puts the instance's own client back.
func (in *Instance) runClient(ctx context.Context, ro RunOptions, base Usage) func() {
	client := *in.opts.Client
	client.Provider = capped{Provider: client.Provider, check: func() error { return in.checkCaps(ctx, ro, base) }}
	observe := client.Observe
	client.Observe = func(e llm.Event) {
		if e.Kind == llm.EventResponse && e.Call != nil {
			in.mu.Lock()
			in.unsettled += e.Call.CostUSD
			in.mu.Unlock()
		}
		if observe != nil {
			observe(e)
		}
	}
	saved := in.opts.Client
	in.opts.Client = &client
	return func() { in.opts.Client = saved }
}

// runState is a run under way.
type runState struct {
	in       *Instance
	ctx      context.Context
	ro       RunOptions
	rep      *RunReport
	start    time.Time
	base     Usage        // the instance's spend when the run began
	last     *CycleReport // the last cycle run, nil before the first
	failures int          // cycles failed in a row
}

// cycle runs cycle n and counts it; stop is true when the run ends with
// it (a spend cap, or a failure that could not be recorded), with the
// run's report and error.
func (r *runState) cycle(n int) (stop bool, rep *RunReport, err error) {
	in, ro := r.in, r.ro
	cr, err := in.cycle(r.ctx, n, ro)
	r.last = cr
	r.rep.Cycles++
	r.rep.ByLoop[cr.Loop]++
	if cr.Idle != "" {
		r.rep.Idle++
	}
	var ce *capError
	if errors.As(err, &ce) {
		cr.Failed = err.Error()
		if ro.OnCycle != nil {
			ro.OnCycle(cr)
		}
		rep, ferr := r.finish(ce.which, err.Error())
		return true, rep, ferr
	}
	if err != nil {
		r.failures++
		r.rep.Failed++
		cr.Failed = err.Error()
		cr.Backoff = min(ro.MaxBackoff, ro.Backoff<<min(r.failures-1, 20))
		if _, werr := in.remember(memory.Kernel, "cycle", "lumen run",
			fmt.Sprintf("CYCLE FAILED: cycle %d (%s loop): %v; failure %d in a row, waiting %s before the next cycle", n, cr.Loop, err, r.failures, cr.Backoff),
			map[string]any{"loop": cr.Loop, "n": n, "failed": true, "error": err.Error(), "in_a_row": r.failures, "backoff_seconds": cr.Backoff.Seconds()}); werr != nil {
			// Not even the failure can be written: nothing more can be done safely.
			rep, ferr := r.finish(StopFailed, werr.Error())
			return true, rep, errors.Join(fmt.Errorf("lumen run: cycle %d failed (%v) and the failure could not be recorded: %w", n, err, werr), ferr)
		}
	} else {
		r.failures = 0
	}
	if ro.OnCycle != nil {
		ro.OnCycle(cr)
	}
	return false, nil, nil
}

// finish ends the run: why it stopped, and what it and the day spent.
func (r *runState) finish(why, detail string) (*RunReport, error) {
	rep := r.rep
	rep.Stopped, rep.Detail = why, detail
	rep.Elapsed = time.Since(r.start)
	rep.Usage = r.in.spentSince(r.base)
	if r.in.opts.Client.Scripted {
		r.in.mu.Lock()
		rep.CostNote = llm.ScriptedNote(r.in.currentModel())
		r.in.mu.Unlock()
	}
	day, err := r.in.mem.Spend(context.WithoutCancel(r.ctx), memory.Day(r.in.opts.Now()))
	rep.SpentDay = day
	return rep, err
}

// wait sleeps d, or less when the time limit comes first; false when the
// run must stop instead, with why.
func (r *runState) wait(d time.Duration) (string, bool) {
	limit := ""
	if r.ro.For > 0 {
		if left := r.ro.For - time.Since(r.start); left <= d {
			d, limit = max(left, 0), StopTimeLimit
		}
	}
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-r.ctx.Done():
			return StopInterrupted, false
		case <-t.C:
		}
	}
	return limit, limit == ""
}

// interrupted ends a run stopped by ctx, with a kernel memory saying
// where, unless the cycle under way already wrote one (it stopped between
// two of its steps): the signal may come between cycles, in the wait, or
// before the first.
func (r *runState) interrupted() (*RunReport, error) {
	if !r.last.stopRecorded() {
		where, after := "before its first cycle", 0
		if r.last != nil {
			where, after = fmt.Sprintf("between cycles, after cycle %d", r.last.N), r.last.N
		}
		if _, err := r.in.remember(memory.Kernel, "run", "interrupted",
			fmt.Sprintf("interrupted: lumen run stopped %s at the user's request (Ctrl-C, SIGTERM or a closed output); running it again goes on", where),
			map[string]any{"after_cycle": after}); err != nil {
			rep, ferr := r.finish(StopInterrupted, "")
			return rep, errors.Join(fmt.Errorf("lumen run: recording where the run stopped: %w", err), ferr)
		}
	}
	return r.finish(StopInterrupted, "")
}

// stopRecorded reports whether the cycle wrote the kernel memory saying
// after which of its steps Ctrl-C stopped it.
func (c *CycleReport) stopRecorded() bool {
	switch {
	case c == nil:
		return false
	case c.Explore != nil && c.Explore.Stopped != "":
		return true
	case c.Action != nil && c.Action.Stopped != "":
		return true
	}
	return c.Action != nil && c.Action.Reflection != nil && c.Action.Reflection.Stopped != ""
}

// capsCountable refuses a spend cap the run could not count: a call to a
// model the price table does not know costs $0 to the meter, so a cap
// would never stop the run. The model and every fallback must be priced;
// the refusal is an option error of "prices", the client's price table.
func (in *Instance) capsCountable(ro RunOptions) error {
	if ro.MaxCost <= 0 && ro.MaxCostDay <= 0 {
		return nil
	}
	prices := in.opts.Client.Prices
	if prices == nil {
		prices = llm.DefaultPriceTable()
	}
	for _, model := range append([]string{in.opts.Model}, in.opts.Client.Fallback...) {
		if _, ok := prices.Lookup(model); !ok {
			return option.Errorf("prices", "has no price for model %q, and a spend cap needs the price of every model the run may call: "+
				"its calls would count as $0 and the cap would never stop the run; give its price per million tokens (docs/configuration.md)", model)
		}
	}
	return nil
}

// checkCaps refuses an LLM call once a spend cap is reached.
func (in *Instance) checkCaps(ctx context.Context, ro RunOptions, base Usage) error {
	in.mu.Lock()
	unsettled := in.unsettled
	in.mu.Unlock()
	if ro.MaxCost > 0 {
		if run := in.spentSince(base).CostUSD + unsettled; run >= ro.MaxCost {
			return &capError{StopRunCost, fmt.Sprintf("%v: this run spent $%.4f of its cap of $%.4f", ErrSpendCap, run, ro.MaxCost)}
		}
	}
	if ro.MaxCostDay > 0 {
		day, err := in.mem.Spend(context.WithoutCancel(ctx), memory.Day(in.opts.Now()))
		if err != nil {
			return err
		}
		in.mu.Lock()
		day += in.pending.CostUSD + in.unsettled
		in.mu.Unlock()
		if day >= ro.MaxCostDay {
			return &capError{StopDayCost, fmt.Sprintf("%v: $%.4f spent today (UTC, every process) of the day's cap of $%.4f", ErrSpendCap, day, ro.MaxCostDay)}
		}
	}
	return nil
}

func (in *Instance) cycle(ctx context.Context, n int, ro RunOptions) (*CycleReport, error) {
	step := context.WithoutCancel(ctx)
	rep := &CycleReport{N: n, Loop: LoopAction, Started: in.opts.Now()}
	began, spent := time.Now(), in.Spent()
	defer func() {
		rep.Duration = time.Since(began)
		rep.Usage = in.spentSince(spent)
	}()
	kind, err := in.nextLoop(step)
	if err != nil {
		return rep, err
	}
	rep.Loop = kind
	data := map[string]any{"loop": kind, "n": n}
	if ro.NoReflect {
		data["reflect"] = false
	}
	if _, err := in.remember(memory.Kernel, "cycle", "lumen run", fmt.Sprintf("CYCLE: %s loop (cycle %d of this run)", kind, n), data); err != nil {
		return rep, err
	}
	if kind == LoopExplore {
		rep.Explore, err = in.Explore(ctx)
	} else {
		rep.Action, rep.Idle, err = in.pursueGoal(ctx)
	}
	if err != nil || ctx.Err() != nil {
		return rep, err
	}
	m, err := in.Maintain(step)
	if m.did() {
		rep.Maintenance = m
	}
	return rep, err
}

// nextLoop continues the action/explore alternation from the last cycle
// recorded in memory, so separate `lumen run` invocations alternate too.
func (in *Instance) nextLoop(ctx context.Context) (string, error) {
	last, err := in.mem.List(ctx, memory.Filter{Authors: []string{memory.Kernel}, Step: "cycle", Limit: 1})
	if err != nil || len(last) == 0 {
		return LoopAction, err
	}
	var d struct {
		Loop string `json:"loop"`
	}
	if err := json.Unmarshal(last[0].Data, &d); err != nil {
		return LoopAction, nil // a hand-edited cycle memory: start with action
	}
	if d.Loop == LoopAction {
		return LoopExplore, nil
	}
	return LoopAction, nil
}

// pursueGoal selects the highest-weight active goal, logs the selection
// (a goal memory), moves a todo goal to working, and runs the action loop
// on it. With no active goal the cycle idles, and says so.
func (in *Instance) pursueGoal(ctx context.Context) (*ActionReport, string, error) {
	goals, err := in.Goals()
	if err != nil {
		return nil, "", err
	}
	in.beginTurn()
	active := activeGoals(goals)
	if len(active) == 0 {
		idle := "no active goal to pursue (reflection creates goals; chat works without them)"
		_, err := in.remember(memory.Kernel, "select", "action loop", "SELECT: "+idle, map[string]any{"loop": LoopAction})
		return nil, idle, err
	}
	g := active[0]
	if _, err := in.write(memory.Memory{Author: memory.Goal, Weight: g.Weight, Step: "select", Situation: "action loop",
		Description: fmt.Sprintf("Selected goal %q (weight %.2f, %s) to pursue: the highest-weight active goal.", g.Name, g.Weight, g.Status)},
		map[string]any{"goal": g.Name, "weight": g.Weight, "status": g.Status}); err != nil {
		return nil, "", err
	}
	var moved *AppliedChange
	if g.Status == GoalTodo {
		applied, _, err := in.applyLogged(context.WithoutCancel(ctx), LoopAction, "select", Change{Target: "goal", Op: "set_status", Name: g.Name, Status: GoalWorking})
		if err != nil {
			return nil, "", err
		}
		if moved = applied; moved != nil {
			g.Status = GoalWorking
		}
	}
	rep, err := in.actionLoop(ctx, trigger{goal: &g})
	if moved != nil {
		rep.Applied = append([]AppliedChange{*moved}, rep.Applied...)
	}
	return rep, "", err
}

// Chat runs one chat turn: the input is stored as an external memory, the
// action loop runs on it with the conversation so far, and whatever the
// chosen skill shows the user (the chat skill's reply) is in the report's
// Skill.Display. The turn joins the conversation the next turns see.
func (in *Instance) Chat(ctx context.Context, input string) (*ActionReport, error) {
	input = strings.TrimSpace(input)
	if input == "" {
		return nil, fmt.Errorf("chat: empty input: type something to say")
	}
	if err := in.writable(); err != nil {
		return nil, err
	}
	in.beginTurn()
	in.chatCtx = ctx
	defer func() { in.chatCtx = nil }()
	id, err := in.remember(memory.External, "chat", "chat", input, nil)
	if err != nil {
		return nil, err
	}
	rep, err := in.actionLoop(ctx, trigger{external: input, externalID: id})
	reply := ""
	if rep != nil {
		reply = rep.Reply()
	}
	in.addExchange(Exchange{At: in.opts.Now(), Input: input, Reply: reply})
	return rep, err
}
