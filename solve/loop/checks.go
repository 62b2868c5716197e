package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/llmkernels/kernels/solve/expr"
	"github.com/llmkernels/kernels/solve/store"
	"github.com/llmkernels/kernels/solve/workspace"
)

// The kernel's own checks (σ = 1.0): a logic constraint's command run by
// codex-tools-0, a logic constraint's expression over the node's real
// spend and time, a built tool's self-test. Semantic constraints, and
// logic ones with neither, are judged by the verifier (verify.go).

// constraintPayload is the part of a constraint's payload the kernel reads.
type constraintPayload struct {
	Check string `json:"check"` // a shell command, exit 0 = satisfied
	Expr  string `json:"expr"`  // a condition over the ledger metrics
}

func payloadOf(c ConstraintView) (constraintPayload, error) {
	var p constraintPayload
	if err := json.Unmarshal(c.Payload, &p); err != nil {
		return p, fmt.Errorf("constraint %s: payload: %w", c.ID, err)
	}
	return p, nil
}

// The metrics a logic constraint's expression may name: the node's real
// spend and time, read from the ledger (its subtree's paid calls).
const (
	MetricCost        = "cost_usd"            // what the paid calls of the node and its descendants cost, USD
	MetricTime        = "time_seconds"        // the wall time those calls took, seconds
	MetricElapsed     = "elapsed_seconds"     // wall-clock seconds since the node was created
	MetricBudget      = "budget_usd"          // what the node was allocated, USD
	MetricTimeBudget  = "time_budget_seconds" // the wall time the node was allocated, seconds
	metricDescription = "cost_usd, time_seconds, elapsed_seconds, budget_usd, time_budget_seconds"
)

// ledgerMetrics are the metrics' values for a node now.
func ledgerMetrics(ctx context.Context, c *store.Conn, n *store.Node) (map[string]float64, error) {
	cost, secs, err := c.SubtreeSpend(ctx, n.ID)
	if err != nil {
		return nil, err
	}
	b, err := c.Balance(ctx, n.ID)
	if err != nil {
		return nil, err
	}
	elapsed := 0.0
	if t, err := time.Parse("2006-01-02 15:04:05.000", n.Created); err == nil {
		elapsed = time.Since(t).Seconds()
	}
	return map[string]float64{MetricCost: cost, MetricTime: secs, MetricElapsed: elapsed, MetricBudget: b.Allocated, MetricTimeBudget: b.TimeAllocated}, nil
}

// exprProblem says why a logic constraint's expression can never be
// evaluated (it does not parse, or names a metric there is not), or "".
func exprProblem(src string) string {
	e, err := expr.Parse(src)
	if err != nil {
		return err.Error()
	}
	for _, v := range e.Vars() {
		if !slices.Contains(metricNames, v) {
			return fmt.Sprintf("expression %q: unknown metric %q (the metrics: %s)", src, v, metricDescription)
		}
	}
	return ""
}

var metricNames = []string{MetricCost, MetricTime, MetricElapsed, MetricBudget, MetricTimeBudget}

// exprCheck evaluates a logic constraint's expression against the metrics.
// An expression that cannot be evaluated fails, saying why.
func exprCheck(c ConstraintView, src string, metrics map[string]float64) (ConstraintCheck, bool) {
	check := ConstraintCheck{ConstraintID: c.ID, Ref: c.Ref, SigmaI: 1}
	e, err := expr.Parse(src)
	if err == nil {
		var ok bool
		if ok, err = e.Eval(metrics); err == nil {
			check.Passed = ok
			check.Detail = fmt.Sprintf("%s is %v with %s", src, ok, metricText(e.Vars(), metrics))
			if !ok {
				check.SigmaI = 0
			}
			// Spend and time only grow: an antitone condition that fails
			// now can never hold again.
			return check, !ok && e.Antitone()
		}
	}
	check.SigmaI = 0
	check.Detail = fmt.Sprintf("expression %q cannot be evaluated: %v (metrics: %s)", src, err, metricDescription)
	return check, false
}

func metricText(vars []string, m map[string]float64) string {
	sort.Strings(vars)
	var parts []string
	for _, v := range vars {
		parts = append(parts, fmt.Sprintf("%s = %s", v, expr.Decimal(m[v])))
	}
	return strings.Join(parts, ", ")
}

// runCheck is codex-tools-0 running a logic constraint's command in dir
// (an attempt's copy of the workspace, or the workspace itself at Step 12).
func (s *stepCtx) runCheck(ctx context.Context, command, dir string, env []string) (workspace.Result, error) {
	var res workspace.Result
	o, err := s.call(ctx, CodexToolsID, &Call{Op: OpRunCheck, Workspace: dir, Env: env, Params: map[string]any{CommandParam: command}})
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal(o.Answer, &res); err != nil {
		return res, Permanent("invalid_format", fmt.Errorf("%s answered %s with no command result: %w", CodexToolsID, OpRunCheck, err))
	}
	return res, nil
}

// commandCheck is a command's result as a check.
func commandCheck(c ConstraintView, command string, r workspace.Result) ConstraintCheck {
	sigma := 0.0
	if r.Passed {
		sigma = 1
	}
	return ConstraintCheck{ConstraintID: c.ID, Ref: c.Ref, Passed: r.Passed, SigmaI: sigma,
		Detail: map[string]any{"command": command, "exit_code": r.ExitCode, "output": tail(r.Output)}}
}

// toolSelfTest materializes a built tool in a temporary directory and has
// codex-tools-0 run its test command there (σ = 1.0 on pass); like every
// check it is paid for and runs under the node's deadline.
func (s *stepCtx) toolSelfTest(ctx context.Context, artifact string, t *ToolSpec) (ConstraintCheck, error) {
	c := ConstraintCheck{ConstraintID: "kernel:tool_self_test", Ref: "tool", SigmaI: 0}
	if t.Command == "" || t.TestCommand == "" || len(t.Capabilities) == 0 {
		c.Detail = "the tool needs a command, a test_command and at least one capability"
		return c, nil
	}
	if err := CheckNetwork(t.Network); err != nil {
		c.Detail = "the tool's network: " + err.Error()
		return c, nil
	}
	dir, err := os.MkdirTemp("", "solve-tool-")
	if err != nil {
		c.Detail = err.Error()
		return c, nil
	}
	// A temp directory left behind is harmless; the check's verdict is what matters.
	defer func() { _ = os.RemoveAll(dir) }()
	if _, err := MaterializeTool(ctx, &s.st.Conn, artifact, dir); err != nil {
		c.Detail = err.Error()
		return c, nil
	}
	res, err := s.runCheck(ctx, t.TestCommand, dir, []string{"SOLVE_TOOL_DIR=" + dir})
	if err != nil {
		return c, err
	}
	c.Passed = res.Passed
	if res.Passed {
		c.SigmaI = 1
	}
	c.Detail = map[string]any{"test_command": t.TestCommand, "exit_code": res.ExitCode, "output": tail(res.Output)}
	return c, nil
}

// Text renders a check's detail for a person or a prompt: a command's
// exit status and output, a sentence as it is, anything else as JSON
// (never a Go map).
func (c ConstraintCheck) Text() string { return checkText(c) }

func checkText(c ConstraintCheck) string {
	switch d := c.Detail.(type) {
	case nil:
		return ""
	case string:
		return d
	case map[string]any:
		cmd, _ := d["command"].(string)
		if cmd == "" {
			cmd, _ = d["test_command"].(string)
		}
		if cmd != "" {
			text := fmt.Sprintf("`%s` exited %v", cmd, d["exit_code"])
			if out, _ := d["output"].(string); strings.TrimSpace(out) != "" {
				text += ":\n" + strings.TrimRight(out, "\n")
			}
			return text
		}
	}
	return jsonOrText(c.Detail)
}
