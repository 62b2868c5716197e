package planning

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/clip"
	optionerr "github.com/llmkernels/kernels/internal/option" // this package has its own option type (repair.go)
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/solve/planning/smt"
	"github.com/llmkernels/kernels/solve/store"
)

// Request is what a planning run is asked for.
type Request struct {
	Goal        string
	Constraints []string      // extra explicit constraints in words
	BudgetUSD   *float64      // becomes the logic constraint total_cost <= B (id "budget")
	TimeHours   *float64      // becomes critical_path_hours <= T (id "time")
	Model       string        // model for every call ("" = the client's fallback chain)
	MaxWall     time.Duration // wall-clock cap for the whole run (0 = none)
	Retries     int           // re-asks after an answer the kernel rejects (the CLI default is 2)
	LogRaw      bool          // keep raw prompts and answers in tier-3 logs
	SMT         bool          // cross-check feasibility and repair with z3
	SurveyCalls int           // most survey requests in all rounds, re-asks included; round 1 is always asked (0 = DefaultSurveyCalls)
	SMTTimeout  time.Duration // how long z3 may think about one question (0 = smt.DefaultTimeout)
	SearchLimit int           // nodes of one run of the repair search (0 = DefaultSearchLimit)
	Progress    io.Writer     // progress lines; nil = none
}

// StageError is a stage that could not produce an acceptable answer.
type StageError struct {
	Stage    string
	Attempts int
	Problems []string
	Err      error
}

func (e *StageError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("stage %s: %v", e.Stage, e.Err)
	}
	return fmt.Sprintf("stage %s: the model's answer was still invalid after %d attempt(s); the kernel refuses to build a plan on it: %s",
		e.Stage, e.Attempts, strings.Join(e.Problems, "; "))
}

func (e *StageError) Unwrap() error { return e.Err }

// StoppedError is a planning run stopped by its wall-clock cap
// (Request.MaxWall); the root node is marked failed.
type StoppedError struct {
	MaxWall time.Duration
	Stage   string
	Calls   int
	CostUSD float64
	Root    string
	Err     error
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("planning stopped by the wall-clock cap (MaxWall %s) during stage %s (%d LLM calls, $%.4f): %v (root node %s is marked failed; its logs and attempts are kept)",
		e.MaxWall, e.Stage, e.Calls, e.CostUSD, e.Err, e.Root)
}

func (e *StoppedError) Unwrap() error { return e.Err }

// run is one planning run.
type run struct {
	st         *store.Store
	client     *llm.Client
	req        Request
	plan       *Plan
	status     string
	stage      string
	attempt    int
	retries    int // provider retries made by the client during the current ask
	asked      int // requests made by ask (each attempt counts)
	surveyFrom int // asked when the survey stage began
	start      time.Time
}

func (r *run) progress(format string, args ...any) {
	if r.req.Progress == nil {
		return
	}
	u := r.plan.Usage
	fmt.Fprintf(r.req.Progress, "solve: [%s] %s · LLM calls %d · tokens %d in / %d out · cost %s · %s\n",
		r.stage, fmt.Sprintf(format, args...), u.Calls, u.InputTokens, u.OutputTokens, r.plan.cost(false), time.Since(r.start).Round(time.Millisecond))
}

// observe meters every answered call and reports retries.
func (r *run) observe(e llm.Event) {
	switch e.Kind {
	case llm.EventResponse:
		u := &r.plan.Usage
		u.Calls++
		u.InputTokens += e.Call.Usage.InputTokens + e.Call.Usage.CacheCreationInputTokens + e.Call.Usage.CacheReadInputTokens
		u.OutputTokens += e.Call.Usage.OutputTokens
		u.CostUSD += e.Call.CostUSD
		u.Unpriced = u.Unpriced || !e.Call.Priced
		if r.plan.Run.Model == "" {
			r.plan.Run.Model = e.Call.Model
		}
		r.progress("attempt %d: %s answered in %s", r.attempt, e.Call.Model, e.Call.Latency.Round(time.Millisecond))
	case llm.EventRetry:
		r.retries++
		r.progress("retrying %s after: %v (wait %s)", e.Model, e.Err, e.Wait.Round(10*time.Millisecond))
	case llm.EventFallback:
		r.progress("falling back to %s after: %v", e.Model, e.Err)
	}
}

// Make runs the planning pipeline: constraint extraction, decomposition,
// kernel arithmetic, approach survey, repair, optional SMT cross-check,
// and stores everything in kernel.db. It returns the plan, or an error
// naming the stage and why; what was done before the error is in the
// database under the root node, which is marked failed.
func Make(ctx context.Context, st *store.Store, client *llm.Client, req Request) (*Plan, error) {
	if strings.TrimSpace(req.Goal) == "" {
		return nil, optionerr.Errorf("goal", "is empty: give the goal to plan")
	}
	if req.BudgetUSD != nil && !(*req.BudgetUSD > 0) {
		return nil, optionerr.Errorf("budget_usd", "%v: give a positive amount in USD", *req.BudgetUSD)
	}
	if req.TimeHours != nil && !(*req.TimeHours > 0) {
		return nil, optionerr.Errorf("time_hours", "%v: give a positive number of hours", *req.TimeHours)
	}
	if client == nil {
		return nil, errors.New("planning needs an LLM client")
	}
	if req.SMT {
		if _, err := smt.Version(ctx); err != nil {
			return nil, optionerr.Errorf("smt", "%w", err)
		}
	}
	r := &run{st: st, req: req, start: time.Now(), status: store.StatusPending}
	c := *client
	prev := c.Observe
	c.Observe = func(e llm.Event) {
		if prev != nil {
			prev(e)
		}
		r.observe(e)
	}
	r.client = &c
	r.plan = &Plan{Schema: SchemaVersion, RootID: store.NewID(), Goal: req.Goal,
		Inputs: Inputs{Constraints: append([]string{}, req.Constraints...), BudgetUSD: req.BudgetUSD, TimeHours: req.TimeHours},
		Run:    RunInfo{StartedAt: r.start.UTC().Format(time.RFC3339), MaxWallSeconds: req.MaxWall.Seconds(), DB: st.Path()}}
	r.plan.Usage.Scripted = client.Scripted
	budget, hours := 0.0, 0.0
	if req.BudgetUSD != nil {
		budget = *req.BudgetUSD
	}
	if req.TimeHours != nil {
		hours = *req.TimeHours
	}
	if err := createRoot(ctx, st, r.plan.RootID, req.Goal, budget, hours*3600); err != nil {
		return nil, fmt.Errorf("kernel database %s: %w", st.Path(), err)
	}
	r.stage = "start"
	r.flow(fmt.Sprintf("Node %s: PLAN goal %q", store.Short(r.plan.RootID), r.plan.Goal))
	if req.MaxWall > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.MaxWall)
		defer cancel()
	}
	if err := r.pipeline(ctx); err != nil {
		return nil, r.fail(ctx, err)
	}
	return r.plan, nil
}

// flow writes a tier-1 line and the same as a progress line. The log is
// best effort: a run that cannot write it still plans, and any store
// failure that matters surfaces at the next recorded attempt.
func (r *run) flow(summary string) {
	r.progress("%s", summary)
	_ = r.st.Log(context.Background(), 1, r.plan.RootID, summary, nil)
}

// decision writes a tier-2 row, best effort like flow.
func (r *run) decision(summary string, detail any) {
	_ = r.st.Log(context.Background(), 2, r.plan.RootID, summary, detail)
}

func (r *run) move(ctx context.Context, to string) error {
	if err := r.st.Transition(ctx, r.plan.RootID, r.status, to); err != nil {
		return err
	}
	r.status = to
	return nil
}

// fail marks the root failed and explains a stopped run.
func (r *run) fail(ctx context.Context, err error) error {
	bg := context.WithoutCancel(ctx)
	stopped := errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded)
	if stopped {
		err = &StoppedError{MaxWall: r.req.MaxWall, Stage: r.stage, Calls: r.plan.Usage.Calls, CostUSD: r.plan.Usage.CostUSD, Root: r.plan.RootID, Err: err}
	}
	// Best effort: the error being returned matters more than marking.
	_ = r.st.Transition(bg, r.plan.RootID, r.status, store.StatusFailed)
	summary := fmt.Sprintf("Node %s: FAILED in stage %s: %v", store.Short(r.plan.RootID), r.stage, err)
	_ = r.st.Log(bg, 1, r.plan.RootID, summary, nil)
	if stopped {
		return err
	}
	return fmt.Errorf("%w (root node %s in %s is marked failed; its logs and attempts are kept)", err, r.plan.RootID, r.st.Path())
}

func (r *run) pipeline(ctx context.Context) error {
	if err := r.constraints(ctx); err != nil {
		return err
	}
	if err := r.decompose(ctx); err != nil {
		return err
	}
	if err := r.analyse(); err != nil {
		return err
	}
	if err := r.survey(ctx); err != nil {
		return err
	}
	if err := r.repair(ctx); err != nil {
		return err
	}
	if r.req.SMT {
		if err := r.crossCheck(ctx); err != nil {
			return err
		}
	}
	return r.save(ctx)
}

// ask asks the model for a T, validates it with the kernel's checks, and
// re-asks with the violations quoted, up to attempts times in all. An
// answer that fits the schema but cannot be read (a number beyond float64,
// such as 1e400) is re-asked like any other rejected answer; a refusal
// ends the stage saying so. Every attempt is a resolution_attempts row;
// every call a tier-3 log row.
func ask[T any](ctx context.Context, r *run, user string, maxTokens, attempts int, validate func(T) []string) (T, error) {
	var zero T
	sys, err := prompt(r.stage + "_system.md")
	if err != nil {
		return zero, err
	}
	schema, err := llm.SchemaFor[T]()
	if err != nil {
		return zero, err
	}
	msgs := []llm.Message{llm.UserText(user)}
	var feedback []string
	for attempt := 1; ; attempt++ {
		r.attempt = attempt
		if err := ctx.Err(); err != nil {
			return zero, &StageError{Stage: r.stage, Attempts: attempt - 1, Err: err}
		}
		r.asked++
		req := &llm.Request{Model: r.req.Model, MaxTokens: maxTokens, System: []llm.SystemBlock{{Type: llm.BlockText, Text: sys}}, Messages: msgs}
		began := time.Now()
		r.retries = 0
		raw, calls, err := llm.AskSchema(ctx, r.client, req, schema, llm.JSONOptions{})
		r.logCalls(ctx, req, calls, attempt)
		rec := attemptRecord{Node: r.plan.RootID, Stage: r.stage, Feedback: feedback, Seconds: time.Since(began).Seconds()}
		for _, c := range calls {
			rec.CostUSD += c.CostUSD
		}
		if err != nil {
			var soe *llm.StructuredOutputError
			rec.FailureMode, rec.Summary = "llm_error", err.Error()
			if errors.As(err, &soe) {
				rec.FailureMode, rec.Problems = "malformed_json", soe.Errors
			}
			refused := refusals(calls)
			if len(refused) > 0 {
				rec.FailureMode = "refusal"
			}
			if ctx.Err() != nil {
				rec.FailureMode = "wall_clock"
			}
			_ = recordAttempt(context.WithoutCancel(ctx), r.st, rec) // the stage error below is what the caller needs
			switch {
			case len(refused) > 0 && ctx.Err() == nil:
				return zero, &StageError{Stage: r.stage, Attempts: attempt, Err: fmt.Errorf("the model refused to answer (stop_reason %q on %d of %d call(s)); it said: %s",
					llm.StopRefusal, len(refused), len(calls), clip.Text(refused[len(refused)-1], 300))}
			case soe != nil:
				return zero, &StageError{Stage: r.stage, Attempts: attempt,
					Err: fmt.Errorf("the model's answer is not valid JSON for this stage after %d call(s) (schema repair included): %s", len(calls), strings.Join(soe.Errors, "; "))}
			}
			return zero, &StageError{Stage: r.stage, Attempts: attempt, Err: fmt.Errorf("LLM call failed after %d provider retries: %w", r.retries, err)}
		}
		var v T
		var problems []string
		if err := json.Unmarshal(raw, &v); err != nil {
			problems = []string{fmt.Sprintf("the answer fits the schema but cannot be read: %v; write every number as a finite decimal (at most about 1e308)", err)}
		} else {
			problems = validate(v)
		}
		r.decision(fmt.Sprintf("%s answer, attempt %d: %d problem(s)", r.stage, attempt, len(problems)),
			map[string]any{"decision": r.stage + "_answer", "attempt": attempt, "accepted": len(problems) == 0, "problems": problems, "answer": json.RawMessage(raw)})
		rec.Problems = problems
		rec.Summary = fmt.Sprintf("%s attempt %d: %d problem(s)", r.stage, attempt, len(problems))
		if len(problems) > 0 {
			rec.FailureMode = "invalid_" + r.stage
		}
		if err := recordAttempt(ctx, r.st, rec); err != nil {
			return zero, err
		}
		if len(problems) == 0 {
			return v, nil
		}
		r.flow(fmt.Sprintf("Node %s: %s attempt %d rejected: %s", store.Short(r.plan.RootID), r.stage, attempt, strings.Join(problems, "; ")))
		if attempt >= attempts {
			return zero, &StageError{Stage: r.stage, Attempts: attempt, Problems: problems}
		}
		again, err := retryTurn(problems)
		if err != nil {
			return zero, err
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: []llm.ContentBlock{llm.TextBlock(calls[len(calls)-1].Response.Text())}},
			llm.UserText(again))
		feedback = problems
	}
}

// refusals returns the text of each call that stopped with a refusal.
func refusals(calls []*llm.Call) []string {
	var out []string
	for _, c := range calls {
		if c.Response.StopReason == llm.StopRefusal {
			t := strings.TrimSpace(c.Response.Text())
			if t == "" {
				t = "(no text)"
			}
			out = append(out, t)
		}
	}
	return out
}

// logCalls writes a tier-3 row per call: metadata always, raw text only
// with --log-raw.
func (r *run) logCalls(ctx context.Context, req *llm.Request, calls []*llm.Call, attempt int) {
	for i, c := range calls {
		d := map[string]any{"stage": r.stage, "attempt": attempt, "call": i + 1, "resolver": ResolverID, "model": c.Model,
			"input_tokens": c.Usage.InputTokens, "output_tokens": c.Usage.OutputTokens, "cost": c.CostUSD, "priced": c.Priced,
			"time_seconds": c.Latency.Seconds(), "stop_reason": c.Response.StopReason, "raw_io_policy": "redacted_by_default"}
		if r.req.LogRaw {
			d["raw_io_policy"] = "raw (--log-raw)"
			d["request"] = req
			d["response_text"] = c.Response.Text()
		}
		_ = r.st.Log(context.WithoutCancel(ctx), 3, r.plan.RootID, fmt.Sprintf("%s call %d.%d", r.stage, attempt, i+1), d) // best effort, like flow
	}
}

// kernelConstraints turns --budget and --time into logic constraints.
func kernelConstraints(req Request) []Constraint {
	var out []Constraint
	if req.BudgetUSD != nil {
		out = append(out, Constraint{ID: "budget", Type: Logic, Domain: "cost", Title: "Budget cap (--budget)", Explicit: true,
			Quote: fmt.Sprintf("--budget %s", num(*req.BudgetUSD)), Payload: Payload{Expr: "total_cost <= " + num(*req.BudgetUSD)},
			Provenance: Provenance{Source: "human", ResolverID: KernelResolverID}, Sigma: 1,
			RemovalConsequence: "the plan could spend without limit", OpenQuestions: []string{}})
	}
	if req.TimeHours != nil {
		out = append(out, Constraint{ID: "time", Type: Logic, Domain: "schedule", Title: "Time cap (--time)", Explicit: true,
			Quote: fmt.Sprintf("--time %sh", num(*req.TimeHours)), Payload: Payload{Expr: "critical_path_hours <= " + num(*req.TimeHours)},
			Provenance: Provenance{Source: "human", ResolverID: KernelResolverID}, Sigma: 1,
			RemovalConsequence: "the plan could run past the deadline", OpenQuestions: []string{}})
	}
	return out
}

var quantityName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func (r *run) constraints(ctx context.Context) error {
	r.stage = StageConstraints
	if err := r.move(ctx, store.StatusIdentifying); err != nil {
		return err
	}
	kc := kernelConstraints(r.req)
	user := constraintsTurn(r.req.Goal, r.req.Constraints, kc, GoalFigures(r.req.Goal))
	r.flow(fmt.Sprintf("Node %s: IDENTIFY_CONSTRAINTS using %s", store.Short(r.plan.RootID), ResolverID))
	ans, err := ask(ctx, r, user, 8000, r.req.Retries+1, func(a constraintsAnswer) []string { return r.checkConstraints(a, kc) })
	if err != nil {
		return err
	}
	r.plan.Constraints = append(kc, toConstraints(ans.Constraints)...)
	var stated []StatedConstraint
	for _, q := range ans.StatedConstraints {
		stated = append(stated, StatedConstraint{Quote: q.Quote})
	}
	r.plan.Stated = cover(r.req.Goal, r.plan.Inputs, r.plan.Constraints, stated, ans.NotConstraints).stated
	if r.plan.Stated == nil {
		r.plan.Stated = []StatedConstraint{}
	}
	r.plan.NotStated = ans.NotConstraints
	if r.plan.NotStated == nil {
		r.plan.NotStated = []NotConstraint{}
	}
	r.plan.Quantities = ans.Quantities
	if r.plan.Quantities == nil {
		r.plan.Quantities = []Quantity{}
	}
	r.plan.OpenQuestions = ans.OpenQuestions
	if err := saveConstraints(ctx, r.st, r.plan.RootID, r.plan.Constraints); err != nil {
		return fmt.Errorf("kernel.db: %w", err)
	}
	r.status = store.StatusSelectingResolve
	explicit := 0
	for _, c := range r.plan.Constraints {
		if c.Explicit {
			explicit++
		}
	}
	r.flow(fmt.Sprintf("Node %s: %d constraints (%d explicit, %d implicit), %d declared quantities", store.Short(r.plan.RootID),
		len(r.plan.Constraints), explicit, len(r.plan.Constraints)-explicit, len(r.plan.Quantities)))
	return nil
}

func toConstraints(as []constraintAnswer) []Constraint {
	var out []Constraint
	for _, a := range as {
		c := Constraint{ID: a.ID, Type: a.Type, Domain: a.Domain, Title: a.Title, Explicit: a.Explicit, Quote: a.Quote,
			Sigma: a.Sigma, RemovalConsequence: a.RemovalConsequence, OpenQuestions: a.OpenQuestions,
			Provenance: Provenance{Source: "resolver", ResolverID: ResolverID, DerivedFrom: a.DerivedFrom}}
		if c.OpenQuestions == nil {
			c.OpenQuestions = []string{}
		}
		if a.Explicit {
			c.Provenance.Source = "human"
		} else if len(a.DerivedFrom) > 0 {
			c.Provenance.Source = "derived"
		}
		if a.Type == Logic {
			c.Payload.Expr, c.Sigma = a.Expr, 1 // logic constraints are decided by the kernel: σ = 1.0
		} else {
			c.Payload.Rubric = a.Rubric
		}
		out = append(out, c)
	}
	return out
}

// checkConstraints is the kernel's validation of an extraction.
func (r *run) checkConstraints(a constraintsAnswer, kc []Constraint) []string {
	var problems []string
	ids := map[string]bool{}
	for _, c := range kc {
		ids[c.ID] = true
	}
	declared := map[string]bool{}
	for _, q := range a.Quantities {
		switch {
		case !quantityName.MatchString(q.Name):
			problems = append(problems, fmt.Sprintf("quantity %q: use a snake_case name with its unit, e.g. p99_latency_ms", q.Name))
		case slices.Contains(builtinMetrics, q.Name):
			problems = append(problems, fmt.Sprintf("quantity %q is a built-in metric; do not declare it", q.Name))
		case declared[q.Name]:
			problems = append(problems, fmt.Sprintf("quantity %q is declared twice", q.Name))
		}
		declared[q.Name] = true
	}
	if len(a.Constraints) == 0 {
		problems = append(problems, "no constraints: list the goal's explicit constraints and at least one implicit one")
	}
	cs := append(slices.Clone(kc), toConstraints(a.Constraints)...)
	explicit, implicit := 0, 0
	for _, c := range a.Constraints {
		switch {
		case strings.TrimSpace(c.ID) == "":
			problems = append(problems, fmt.Sprintf("constraint %q has no id", c.Title))
		case ids[c.ID]:
			problems = append(problems, fmt.Sprintf("constraint id %q is used twice", c.ID))
		}
		ids[c.ID] = true
		if strings.TrimSpace(c.RemovalConsequence) == "" {
			problems = append(problems, fmt.Sprintf("%s has no removal_consequence: say what goes wrong if it is dropped", c.ID))
		}
		switch c.Type {
		case Logic:
			if strings.TrimSpace(c.Expr) == "" {
				problems = append(problems, fmt.Sprintf("%s is logic but has no expr; write a condition over plan metrics such as total_cost <= 500, or make it semantic with a rubric", c.ID))
			}
		case Semantic:
			if strings.TrimSpace(c.Rubric) == "" {
				problems = append(problems, fmt.Sprintf("%s is semantic but has no rubric", c.ID))
			}
			if c.Expr != "" {
				problems = append(problems, fmt.Sprintf("%s is semantic but has an expr; only logic constraints have one", c.ID))
			}
		}
		if c.Explicit {
			explicit++
			if !quoteFound(Constraint{Quote: c.Quote}, r.req.Goal, r.plan.Inputs) {
				problems = append(problems, fmt.Sprintf("%s is explicit but its quote %q is not words of the goal or a --constraint; copy the words verbatim", c.ID, c.Quote))
			}
		} else {
			implicit++
		}
		for _, d := range c.DerivedFrom {
			if !slices.ContainsFunc(cs, func(x Constraint) bool { return x.ID == d }) {
				problems = append(problems, fmt.Sprintf("%s is derived from %q, which is not a constraint id", c.ID, d))
			}
		}
	}
	_, exprProblems := parseLogic(cs, a.Quantities)
	problems = append(problems, exprProblems...)
	var stated []StatedConstraint
	for _, q := range a.StatedConstraints {
		stated = append(stated, StatedConstraint{Quote: q.Quote})
	}
	cv := cover(r.req.Goal, r.plan.Inputs, cs, stated, a.NotConstraints)
	problems = append(problems, cv.problems...)
	if len(cv.unaccounts) > 0 {
		problems = append(problems, fmt.Sprintf("the goal's figure(s) %s are in no stated_constraints or not_constraints quote; list each as a stated constraint, or as a not-constraint with the reason", strings.Join(cv.unaccounts, ", ")))
	}
	n, why := ExplicitMinimum(stated, r.plan.Inputs)
	if explicit+len(kc) < n {
		problems = append(problems, fmt.Sprintf("%d explicit constraint(s), but the goal and flags state at least %d (%s); give each its own explicit constraint", explicit+len(kc), n, why))
	}
	if implicit == 0 {
		problems = append(problems, "no implicit constraint: add at least one constraint the goal does not state but an expert would hold the work to")
	}
	return problems
}

func (r *run) decompose(ctx context.Context) error {
	r.stage = StageDecompose
	if err := r.move(ctx, store.StatusResolving); err != nil {
		return err
	}
	user := decomposeTurn(r.req.Goal, r.plan.Constraints, r.plan.Quantities)
	r.flow(fmt.Sprintf("Node %s: DECOMPOSE using %s", store.Short(r.plan.RootID), ResolverID))
	ans, err := ask(ctx, r, user, 16000, r.req.Retries+1, func(a decompositionAnswer) []string {
		// Each answer is one RESOLVE → VERIFY round on the root. The
		// status only records the round; a refused move (kept as it was)
		// changes nothing the answer is judged on.
		if r.status == store.StatusVerifying {
			_ = r.move(ctx, store.StatusResolving)
		}
		_ = r.move(ctx, store.StatusVerifying)
		_, err := Analyze(toTasks(a.Tasks), r.plan.Quantities, r.plan.Constraints)
		if err == nil {
			return nil
		}
		if problems, ok := errInvalid(err); ok {
			return problems
		}
		return []string{err.Error()}
	})
	if err != nil {
		return err
	}
	r.plan.Tasks = toTasks(ans.Tasks)
	r.plan.Claims = []Claim{
		{Name: "total_cost_mid", Stated: ans.StatedTotals.TotalCostMid},
		{Name: "critical_path_hours_mid", Stated: ans.StatedTotals.CriticalPathHoursMid},
	}
	r.flow(fmt.Sprintf("Node %s: %d tasks, DAG valid", store.Short(r.plan.RootID), len(r.plan.Tasks)))
	return nil
}

func toTasks(as []taskAnswer) []Task {
	out := make([]Task, len(as))
	for i, a := range as {
		out[i] = Task{ID: a.ID, Title: a.Title, Type: a.Type, Description: a.Description, DependsOn: a.DependsOn,
			CostUSD: a.CostUSD, Hours: a.Hours, Confidence: a.Confidence, Method: a.Method, Quantities: a.Quantities, Rationale: a.Rationale}
		if out[i].DependsOn == nil {
			out[i].DependsOn = []string{}
		}
	}
	return out
}

// analyse is the kernel's arithmetic: no LLM.
func (r *run) analyse() error {
	r.stage = StageAnalysis
	a, err := Analyze(r.plan.Tasks, r.plan.Quantities, r.plan.Constraints)
	if err != nil {
		return &StageError{Stage: r.stage, Err: err}
	}
	r.plan.Analysis = a
	for i := range r.plan.Claims {
		c := &r.plan.Claims[i]
		c.Computed = a.Metrics[claimMetric(c.Name)].Mid
		c.Agrees = approx(c.Stated, c.Computed)
		if !c.Agrees {
			r.flow(fmt.Sprintf("Node %s: the model stated %s = %s, but its own tasks give %s; the kernel's figure is used", store.Short(r.plan.RootID), c.Name, num(c.Stated), num(c.Computed)))
			r.decision("llm claim disagrees", map[string]any{"decision": "claim_rejected", "claim": c})
		}
	}
	var verdicts []string
	for _, v := range a.Verdicts {
		if v.Type == Logic {
			verdicts = append(verdicts, v.ConstraintID+" "+v.Verdict)
		}
	}
	r.decision("verdicts", map[string]any{"decision": "feasibility", "verdicts": a.Verdicts, "walls": a.Walls})
	r.flow(fmt.Sprintf("Node %s: mid cost $%.2f (low %.2f, high %.2f), critical path %sh; %s", store.Short(r.plan.RootID),
		a.Cost.Mid, a.Cost.Low, a.Cost.High, num(a.Time.Mid), strings.Join(verdicts, ", ")))
	return nil
}

// DefaultSurveyCalls is the survey call budget when Request.SurveyCalls
// is 0: the first round, a widening round and a retry, with a re-ask to
// spare.
const DefaultSurveyCalls = 5

// survey runs the first round: every task with low confidence or in the
// wall of an UNSAT constraint. A failure here fails the run.
func (r *run) survey(ctx context.Context) error {
	r.stage = StageSurvey
	r.surveyFrom = r.asked
	r.plan.Surveys, r.plan.SurveyRounds = []Survey{}, []SurveyRound{}
	rp := firstRound(r.plan.Tasks, r.plan.Analysis)
	if len(rp.tasks) == 0 {
		r.flow(fmt.Sprintf("Node %s: no task has confidence < %.1f or sits in an UNSAT wall; no survey", store.Short(r.plan.RootID), SurveyConfidence))
		return nil
	}
	ans, err := r.surveyRound(ctx, rp, r.req.Retries+1)
	r.recordRound(rp, err)
	if err != nil {
		return err
	}
	r.plan.Surveys = addRound(r.plan.Surveys, r.plan.Tasks, rp, ans)
	return nil
}

// surveyRound asks one round's survey.
func (r *run) surveyRound(ctx context.Context, rp roundPlan, attempts int) (surveyAnswer, error) {
	var list []map[string]any
	var items []surveyTask
	for _, id := range rp.tasks {
		var prev []Approach
		for _, sv := range r.plan.Surveys {
			if sv.TaskID == id {
				prev = sv.Approaches
			}
		}
		list = append(list, map[string]any{"ID": id, "Why": rp.texts(id), "Previous": prev})
		items = append(items, surveyTask{ID: id, Why: rp.texts(id), Previous: prev})
	}
	r.decision("survey triggered", map[string]any{"decision": "survey_trigger", "round": rp.round, "kind": rp.kind, "tasks": list, "feedback": rp.feedback})
	user := surveyTurn(r.req.Goal, r.plan.Analysis, r.plan.Quantities, r.plan.Tasks, items, rp.round, rp.feedback)
	sc, err := newSurveyCheck(r.plan, rp, r.plan.Surveys)
	if err != nil {
		return surveyAnswer{}, &StageError{Stage: r.stage, Err: err}
	}
	r.flow(fmt.Sprintf("Node %s: SURVEY round %d (%s) for %d task(s): %s", store.Short(r.plan.RootID), rp.round, rp.kind, len(rp.tasks), strings.Join(rp.tasks, ", ")))
	return ask(ctx, r, user, 12000, attempts, sc.answer)
}

// recordRound keeps a round and its outcome in the plan.
func (r *run) recordRound(rp roundPlan, err error) {
	outcome := RoundAnswered
	if err != nil {
		outcome = err.Error()
	}
	r.plan.SurveyRounds = append(r.plan.SurveyRounds, SurveyRound{Round: rp.round, Kind: rp.kind, Tasks: rp.tasks, Feedback: rp.feedback, Outcome: outcome})
}

// repair searches for a repair; while none exists and the survey budget
// and the wall clock allow, it widens the survey and retries with the
// violation fed back, then searches again. A later round that fails (a
// rejected answer, the clock) leaves the repair as it was, saying why.
func (r *run) repair(ctx context.Context) error {
	budget := r.req.SurveyCalls
	if budget <= 0 {
		budget = DefaultSurveyCalls
	}
	for round := 2; ; round++ {
		r.stage = StageRepair
		rep, err := repairPlan(ctx, r.plan.Tasks, r.plan.Quantities, r.plan.Constraints, r.plan.Surveys, r.plan.Analysis, r.req.SearchLimit)
		if err != nil {
			return &StageError{Stage: r.stage, Err: err}
		}
		r.plan.Repair = rep
		r.decision("repair", map[string]any{"decision": "repair", "round": round - 1, "repair": rep})
		if rep.Status != RepairInfeasible {
			break
		}
		r.flow(fmt.Sprintf("Node %s: NO REPAIR after round %d: %s", store.Short(r.plan.RootID), round-1, rep.Note))
		rp, err := nextRound(r.plan.Tasks, r.plan.Quantities, r.plan.Constraints, r.plan.Surveys, rep, round)
		if err != nil {
			return &StageError{Stage: r.stage, Err: err}
		}
		if len(rp.tasks) == 0 {
			r.plan.Repair.Note += "; no task is left to survey"
			break
		}
		r.stage = StageSurvey
		left := budget - r.surveyAsked()
		if left <= 0 {
			r.stopRounds(rp, fmt.Sprintf("not asked: the survey call budget (%d) is spent", budget))
			break
		}
		rctx, cancel, ok := r.roundContext(ctx)
		if !ok {
			cancel()
			r.stopRounds(rp, "not asked: too little of --max-wall is left")
			break
		}
		ans, err := r.surveyRound(rctx, rp, min(left, r.req.Retries+1))
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return err // the run's own cap passed
			}
			why := err.Error()
			if errors.Is(rctx.Err(), context.DeadlineExceeded) {
				why = "stopped to keep time to write the plan within --max-wall"
			}
			r.stopRounds(rp, why)
			break
		}
		r.recordRound(rp, nil)
		r.plan.Surveys = addRound(r.plan.Surveys, r.plan.Tasks, rp, ans)
	}
	rep := r.plan.Repair
	switch rep.Status {
	case RepairRepaired:
		var ch []string
		for _, c := range rep.Choices {
			ch = append(ch, c.TaskID+"→"+c.ApproachID)
		}
		r.flow(fmt.Sprintf("Node %s: REPAIRED by %s: revised mid cost $%.2f (was $%.2f); %d search nodes over %s combinations",
			store.Short(r.plan.RootID), strings.Join(ch, ", "), rep.Revised.Cost.Mid, r.plan.Analysis.Cost.Mid, rep.Explored, num(rep.Space)))
	case RepairInfeasible:
		r.flow(fmt.Sprintf("Node %s: NO REPAIR: %s", store.Short(r.plan.RootID), rep.Note))
	case RepairUndecided:
		r.flow(fmt.Sprintf("Node %s: REPAIR UNDECIDED: %s", store.Short(r.plan.RootID), rep.Note))
	default:
		r.flow(fmt.Sprintf("Node %s: %s", store.Short(r.plan.RootID), rep.Note))
	}
	return nil
}

// surveyAsked counts the survey requests made so far (re-asks included).
func (r *run) surveyAsked() int { return r.asked - r.surveyFrom }

// stopRounds records a round that was not answered and ends the rounds.
func (r *run) stopRounds(rp roundPlan, why string) {
	r.plan.SurveyRounds = append(r.plan.SurveyRounds, SurveyRound{Round: rp.round, Kind: rp.kind, Tasks: rp.tasks, Feedback: rp.feedback, Outcome: why})
	r.plan.Repair.Note += fmt.Sprintf("; survey round %d (%s of %s) %s", rp.round, rp.kind, strings.Join(rp.tasks, ", "), why)
	r.flow(fmt.Sprintf("Node %s: survey round %d %s", store.Short(r.plan.RootID), rp.round, why))
}

// roundContext bounds a later survey round so that a tenth of --max-wall
// (at least a second, at most a minute) is kept to finish the run; ok is
// false when that much is no longer left.
func (r *run) roundContext(ctx context.Context) (context.Context, context.CancelFunc, bool) {
	deadline, has := ctx.Deadline()
	if !has {
		c, cancel := context.WithCancel(ctx)
		return c, cancel, true
	}
	reserve := min(max(r.req.MaxWall/10, time.Second), time.Minute)
	c, cancel := context.WithDeadline(ctx, deadline.Add(-reserve))
	return c, cancel, time.Until(deadline) > 2*reserve
}

// crossCheck asks z3. Whatever z3 does (disagrees, gives up on a
// question, fails, runs past the time kept for it), the plan is still
// written, with the outcome in its smt section; the CLI then says so, and
// a disagreement makes it exit 1.
func (r *run) crossCheck(ctx context.Context) error {
	r.stage = StageSMT
	zctx, cancel, ok := r.roundContext(ctx)
	defer cancel()
	if !ok {
		r.plan.SMT = &smt.Report{Error: "not run: too little of --max-wall is left"}
		r.flow(fmt.Sprintf("Node %s: z3 cross-check not run: too little of --max-wall is left", store.Short(r.plan.RootID)))
		return nil
	}
	rep, err := CrossCheck(zctx, r.plan, r.req.SMTTimeout)
	if err != nil {
		if ctx.Err() != nil {
			return err // the run's own cap passed
		}
		why := err.Error()
		if errors.Is(zctx.Err(), context.DeadlineExceeded) {
			why = "stopped to keep time to write the plan within --max-wall: " + why
		}
		r.plan.SMT = &smt.Report{Error: why}
		r.flow(fmt.Sprintf("Node %s: z3 cross-check failed: %s; the plan is written without it", store.Short(r.plan.RootID), why))
		return nil
	}
	r.plan.SMT = rep
	r.decision("smt cross-check", map[string]any{"decision": "smt_cross_check", "report": rep})
	switch {
	case rep.Disagree > 0:
		r.flow(fmt.Sprintf("Node %s: z3 DISAGREES with the kernel on %d question(s): %s; this is a kernel bug, please report it with the plan", store.Short(r.plan.RootID), rep.Disagree, rep.Disagreements()))
	case rep.Unknown > 0:
		r.flow(fmt.Sprintf("Node %s: %s agrees on %d question(s) and could not decide %d within %s each", store.Short(r.plan.RootID), rep.Solver, len(rep.Checks)-rep.Unknown, rep.Unknown, smt.OrDefault(r.req.SMTTimeout)))
	default:
		r.flow(fmt.Sprintf("Node %s: %s agrees on all %d questions (%.1fs)", store.Short(r.plan.RootID), rep.Solver, len(rep.Checks), rep.Seconds))
	}
	return nil
}

func (r *run) save(ctx context.Context) error {
	r.stage = StageSave
	final, a := r.plan.Tasks, r.plan.Analysis
	if r.plan.Repair.Status == RepairRepaired {
		final, a = applyChoices(r.plan.Tasks, r.plan.Surveys, r.plan.Repair.Choices), r.plan.Repair.Revised
	}
	r.plan.Run.WallSeconds = math.Round(time.Since(r.start).Seconds()*1000) / 1000
	if err := saveDecomposition(ctx, r.st, r.plan, final, a); err != nil {
		return fmt.Errorf("kernel.db: %w", err)
	}
	r.status = store.StatusPending
	return nil
}
