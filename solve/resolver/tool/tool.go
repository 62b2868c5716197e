// Package tool runs a built or hired resolver: a registered shell command
// the workspace can run (sh -c, solve/workspace limits). A built tool's
// files (an artifact) are materialized under
// <workspace>/.solve/tools/<id>/ and passed as $SOLVE_TOOL_DIR. It runs
// confined (solve/workspace), reaching the network only as far as a
// person allowed (the entry's metadata "network_allowed").
package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/record"
	"github.com/llmkernels/kernels/solve/store"
	"github.com/llmkernels/kernels/solve/workspace"
)

// Resolver is one registered command resolver.
type Resolver struct {
	st      *store.Store
	entry   record.Resolver
	sandbox workspace.Sandbox
}

// New runs the registry entry's metadata.command, confined by sb with the
// network a person allowed it; st holds its files.
func New(st *store.Store, entry record.Resolver, sb workspace.Sandbox) *Resolver {
	sb.Network = loop.AllowedNetwork(entry)
	return &Resolver{st: st, entry: entry, sandbox: sb}
}

// Estimate is the registry's price and latency (at least a second).
func (c *Resolver) Estimate(ctx context.Context, t *loop.Call) (float64, float64) {
	return c.entry.CostPerInvocation, max(c.entry.LatencyEstimate, 1)
}

// Resolve runs the command in the workspace.
func (c *Resolver) Resolve(ctx context.Context, t *loop.Call) (*loop.Output, error) {
	command, _ := c.entry.Metadata["command"].(string)
	if t.Workspace == "" {
		return nil, loop.Permanent("no_workspace", fmt.Errorf("resolver %s needs a workspace directory, and the run has none", c.entry.ID))
	}
	env := append([]string{}, t.Env...)
	if art, _ := c.entry.Metadata["tool_artifact_id"].(string); art != "" {
		dir, err := loop.MaterializeTool(ctx, &c.st.Conn, art, filepath.Join(t.Workspace, ".solve", "tools", c.entry.ID))
		if err != nil {
			return nil, loop.Permanent("tool_missing", err)
		}
		env = append(env, "SOLVE_TOOL_DIR="+dir)
	}
	res := workspace.Run(ctx, t.Workspace, command, env, c.sandbox)
	out := &loop.Output{Cost: c.entry.CostPerInvocation, Seconds: res.Seconds}
	ans := loop.ResolveAnswer{Summary: fmt.Sprintf("%s ran %q: exit %d", c.entry.ID, command, res.ExitCode), Text: res.Output}
	if p, _ := t.Params["output_path"].(string); p != "" {
		ans.Files = []workspace.File{{Path: p, Content: res.Output}}
	}
	if !res.Passed {
		return nil, &loop.ResolverError{Permanent: true, Mode: "command_failed", Err: fmt.Errorf("%q exited %d: %s", command, res.ExitCode, res.Output), Cost: out.Cost, Seconds: out.Seconds}
	}
	var err error
	if out.Answer, err = json.Marshal(ans); err != nil {
		return nil, loop.Permanent("invalid_format", err)
	}
	return out, nil
}
