package loop

import (
	"context"
	"slices"
	"strings"

	"github.com/llmkernels/kernels/solve/record"
	"github.com/llmkernels/kernels/solve/store"
)

// bootResolvers are registered at kernel boot (spec §4 step 2).
var bootResolvers = []record.Resolver{
	{ID: SelfModelID, Label: "Self Model", Type: "digital", BuiltBy: "boot",
		Description:  "answers from the registry, ledger and node store: what the kernel can do, what it costs, where a run stands",
		Capabilities: []string{"system_state", "capability_enumeration", "architecture_description", "cost_estimation"}},
	{ID: ClaudeCodeID, Label: "Model call", Type: "digital", BuiltBy: "boot", CostPerToken: 0.015, LatencyEstimate: 30,
		Description: whatIs[ClaudeCodeID] + ", with structured JSON envelopes: constraints, routing, code and text generation, semantic verification, decomposition",
		Capabilities: []string{"decompose", "reason", "generate_code", "verify_semantic", "identify_constraints", "select_constraints",
			"select_resolver", "generate_feedback", "escalate", "gate_confidence", "check_global_consistency", "assemble_artifact",
			"orchestrate", "synthesize_goal", "dispatch", "enforce_invariants"}},
	{ID: CodexToolsID, Label: "Shell runner", Type: "digital", BuiltBy: "boot", CostPerInvocation: 0.01, LatencyEstimate: 60,
		Description:  whatIs[CodexToolsID] + ": commands, file operations and test suites in the workspace, as a subprocess with timeouts and output caps",
		Capabilities: []string{"execute_code", "file_ops", "web_search", "package_install", "shell_execution", "test_execution"}},
}

// whatIs says what the boot resolvers whose spec ids name programs are:
// no Claude Code or Codex program is launched.
var whatIs = map[string]string{
	ClaudeCodeID: "an API call to the model (not the Claude Code program)",
	CodexToolsID: "a shell runner (not the Codex program)",
}

// ResolverNote says what the boot resolvers that text names are, on one
// line ("" when it names none), for a view that shows their spec ids:
// claude-code-0 is an API call to the model, codex-tools-0 a shell runner.
func ResolverNote(text string) string {
	var parts []string
	for _, id := range []string{ClaudeCodeID, CodexToolsID} {
		if strings.Contains(text, id) {
			parts = append(parts, id+" is "+whatIs[id])
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "resolvers: " + strings.Join(parts, "; ")
}

// register upserts a resolver and its KG node with a provides edge per
// capability.
func register(ctx context.Context, c *store.Conn, r record.Resolver) error {
	if err := c.UpsertResolver(ctx, r); err != nil {
		return err
	}
	if err := c.EnsureKGNode(ctx, "resolver:"+r.ID, "resolver", r.Label, map[string]any{"type": r.Type, "built_by": r.BuiltBy}); err != nil {
		return err
	}
	for _, cp := range r.Capabilities {
		if err := c.EnsureKGNode(ctx, "capability:"+cp, "capability", cp, nil); err != nil {
			return err
		}
		if err := c.AddEdgeOnce(ctx, "resolver:"+r.ID, "provides", "capability:"+cp, nil); err != nil {
			return err
		}
	}
	return nil
}

// Boot registers the boot resolvers unless they are there.
func Boot(ctx context.Context, st *store.Store) error {
	n, err := st.CountResolvers(ctx, "boot")
	if err != nil {
		return err
	}
	if n == len(bootResolvers) {
		return nil
	}
	return st.Write(ctx, func(tx *store.Tx) error {
		for _, r := range bootResolvers {
			if err := register(ctx, &tx.Conn, r); err != nil {
				return err
			}
		}
		return nil
	})
}

// Registry lists the registry without writing: the boot resolvers a run
// has not registered yet (as it would register them), then every stored one.
func Registry(ctx context.Context, st *store.Store) ([]record.Resolver, error) {
	stored, err := st.Resolvers(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []record.Resolver
	for _, b := range bootResolvers {
		if !slices.ContainsFunc(stored, func(r record.Resolver) bool { return r.ID == b.ID }) {
			out = append(out, b)
		}
	}
	return append(out, stored...), nil
}

// Candidates is the registry's capability match (string-set overlap) for
// the router: every resolver providing a required capability, and the
// digital boot resolvers as the fallback, in registration order.
// self-model-0 answers the routing question and is never a candidate.
func Candidates(ctx context.Context, st *store.Store, required []string) ([]ResolverView, error) {
	all, err := st.Resolvers(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []ResolverView
	for _, r := range all {
		if r.ID == SelfModelID {
			continue
		}
		match := r.BuiltBy == "boot" && r.Type == "digital"
		for _, c := range required {
			if slices.Contains(r.Capabilities, c) {
				match = true
			}
		}
		if match {
			out = append(out, ResolverView{ID: r.ID, Label: r.Label, Description: r.Description, Type: r.Type, Capabilities: r.Capabilities,
				Successes: r.SuccessCount, Failures: r.FailureCount})
		}
	}
	return out, nil
}
