// Package codex is codex-tools-0: commands, file operations and test
// suites in a workspace directory, as a confined subprocess under the
// call's deadline with an output cap (solve/workspace), never with network. It runs a logic constraint's check
// (loop.OpRunCheck, answered with a workspace.Result) and, as a tool
// plan's step, a command given in the plan's params.
package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/workspace"
)

// Resolver is codex-tools-0.
type Resolver struct {
	costPerInvocation float64
	sandbox           workspace.Sandbox
}

// New is codex-tools-0 at its registry price, running commands confined
// by sb (without network: sb.Network is not used).
func New(sb workspace.Sandbox) *Resolver {
	sb.Network = nil
	return &Resolver{costPerInvocation: 0.01, sandbox: sb}
}

// Estimate is the price of one invocation and a minute.
func (c *Resolver) Estimate(ctx context.Context, t *loop.Call) (float64, float64) {
	return c.costPerInvocation, 60
}

// Resolve runs the command of t.Params[loop.CommandParam] in t.Workspace
// (the loop prepares it: an attempt's copy of the workspace with the
// attempt's files written) until ctx's deadline.
func (c *Resolver) Resolve(ctx context.Context, t *loop.Call) (*loop.Output, error) {
	command, _ := t.Params[loop.CommandParam].(string)
	if command == "" {
		return nil, loop.Permanent("capability_mismatch", fmt.Errorf("codex-tools-0: operation %s needs a command in the plan's params", t.Op))
	}
	if t.Workspace == "" {
		return nil, loop.Permanent("no_workspace", errors.New("codex-tools-0 needs a workspace directory, and the run has none"))
	}
	res := workspace.Run(ctx, t.Workspace, command, t.Env, c.sandbox)
	out := &loop.Output{Cost: c.costPerInvocation, Seconds: res.Seconds}
	if t.Op == loop.OpRunCheck {
		return answer(out, res)
	}
	ans := loop.ResolveAnswer{Summary: fmt.Sprintf("ran %q: exit %d", command, res.ExitCode), Text: res.Output}
	if p, _ := t.Params["output_path"].(string); p != "" {
		ans.Files = []workspace.File{{Path: p, Content: res.Output}}
	}
	if !res.Passed {
		return nil, &loop.ResolverError{Permanent: true, Mode: "command_failed", Err: fmt.Errorf("%q exited %d: %s", command, res.ExitCode, res.Output), Cost: out.Cost, Seconds: out.Seconds}
	}
	return answer(out, ans)
}

// answer puts v as the output's JSON answer (plain data always marshals).
func answer(out *loop.Output, v any) (*loop.Output, error) {
	var err error
	if out.Answer, err = json.Marshal(v); err != nil {
		return nil, loop.Permanent("invalid_format", err)
	}
	return out, nil
}
