// Package claudecode is claude-code-0, the SOLVE loop's LLM resolver:
// one system prompt per operation (prompts/op_<operation>.md, first line
// "SOLVE kernel · operation: <op>"), the user turn laid out from the
// loop.Call by userTurn (goal, constraints as c1…, inputs, KG history
// block, feedback), and a structured JSON answer per operation through
// llm.AskJSON, metered in USD.
package claudecode

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/solve/loop"
)

// The system prompt of each operation is a text file (prompts/op_*.md);
// the user turn lays out the call's data and is written by userTurn:
// text/template would do it too, but a binary that can run a template
// keeps every exported method of every type it links, which made solve's
// twice its size.
//
//go:embed prompts/*.md
var promptFS embed.FS

// systemPrompt is the operation's prompt file, trimmed.
func systemPrompt(op string) (string, error) {
	data, err := promptFS.ReadFile("prompts/op_" + op + ".md")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(data)), nil
}

// userTurn is a call's user turn: the operation and goal, then each part
// of the call that is present (constraints, candidates, parameters,
// inputs, the output to judge, checks, leaves, earlier attempts,
// feedback, the knowledge graph's history).
func userTurn(t *loop.Call) (string, error) {
	var b strings.Builder
	b.WriteString("Operation: " + t.Op)
	if t.Attempt != 0 {
		fmt.Fprintf(&b, " · attempt %d", t.Attempt)
	}
	b.WriteString("\nGoal: " + t.Goal)
	bullets(&b, "\n\nInherited constraints (assumed true; do not repeat them):", each(t.Inherited, func(c loop.ConstraintView) string {
		return fmt.Sprintf("%s [%s, %s] %s", c.Ref, c.Type, c.Domain, c.Title)
	}))
	bullets(&b, "\n\nConstraints:", each(t.Constraints, func(c loop.ConstraintView) string {
		return fmt.Sprintf("%s [%s, %s] %s %s", c.Ref, c.Type, c.Domain, c.Title, c.Payload)
	}))
	bullets(&b, "\n\nCandidate resolvers:", each(t.Candidates, func(r loop.ResolverView) string {
		return fmt.Sprintf("%s (%s): %s; capabilities %s; %d successes, %d failures", r.ID, r.Type, r.Description, strings.Join(r.Capabilities, ", "), r.Successes, r.Failures)
	}))
	if len(t.Params) > 0 {
		params, err := json.Marshal(t.Params) // JSON, never a Go map's %v
		if err != nil {
			return "", err
		}
		b.WriteString("\n\nParameters: " + string(params))
	}
	for _, in := range t.Inputs {
		fmt.Fprintf(&b, "\n\nInput (%s, %s):\n%s", in.Type, in.Format, in.Content)
	}
	if t.Output != nil {
		fmt.Fprintf(&b, "\n\nOutput to judge (%s):\n%s", t.Output.Type, t.Output.Content)
	}
	bullets(&b, "\n\nKernel checks already run:", each(t.Checks, func(c loop.ConstraintCheck) string {
		return fmt.Sprintf("%s passed=%v sigma=%v: %s", c.Ref, c.Passed, c.SigmaI, c.Text())
	}))
	bullets(&b, "\n\nResolved leaves:", each(t.Leaves, func(l loop.LeafView) string {
		return fmt.Sprintf("%s \"%s\" (sigma_path %.2f): %s", l.Ref, l.Summary, l.Sigma, l.Output)
	}))
	if len(t.Attempts) > 0 {
		b.WriteString("\n\nEarlier attempts (oldest first):")
		for _, a := range t.Attempts {
			fmt.Fprintf(&b, "\n\nAttempt %d (%s): %s, sigma_v %.2f", a.Index, a.Resolver, a.Verdict, a.SigmaV)
			if a.FailureMode != "" {
				b.WriteString(", " + a.FailureMode)
			}
			bullets(&b, "\nViolations:", a.Violations)
			if a.Output != "" {
				b.WriteString("\nOutput:\n" + a.Output)
			}
		}
	}
	bullets(&b, "\n\nFeedback from earlier attempts:", t.Feedback)
	if t.History != "" {
		b.WriteString("\n\n" + t.History)
	}
	return strings.TrimSpace(b.String()), nil
}

// bullets writes header and items as a list, one "- item" a line;
// nothing when there are none.
func bullets(b *strings.Builder, header string, items []string) {
	if len(items) == 0 {
		return
	}
	b.WriteString(header)
	for _, it := range items {
		b.WriteString("\n- " + it)
	}
}

// each is f of every item, in order.
func each[T any](items []T, f func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = f(it)
	}
	return out
}

// Resolver is claude-code-0 over an LLM client.
type Resolver struct {
	client *llm.Client
}

// New is claude-code-0 asking client (nil: every call fails with a
// permanent no_llm error).
func New(client *llm.Client) *Resolver { return &Resolver{client: client} }

// outputTokensEstimate is the answer size assumed by estimate_cost_time.
const outputTokensEstimate = 1000

// maxTokens is an answer's max_tokens when the call's cost allows it.
const maxTokens = 8000

// framingTokens bounds what a request adds to its text: the schema
// instruction's words, role and turn markers.
const framingTokens = 256

func (c *Resolver) prompt(t *loop.Call) (sys, user string, err error) {
	if sys, err = systemPrompt(t.Op); err != nil {
		return "", "", fmt.Errorf("claude-code-0: no prompt template for operation %q: %w", t.Op, err)
	}
	user, err = userTurn(t)
	return sys, user, err
}

// Estimate prices the prompt at the model's input rate plus a typical
// answer.
func (c *Resolver) Estimate(ctx context.Context, t *loop.Call) (float64, float64) {
	sys, user, err := c.prompt(t)
	if err != nil {
		return 0, 0
	}
	cost, _ := c.prices().Cost(t.Model, llm.Usage{InputTokens: (len(sys) + len(user) + 2000) / 4, OutputTokens: outputTokensEstimate})
	return cost, 30
}

// prices is the client's price table.
func (c *Resolver) prices() llm.PriceTable {
	if c.client != nil && c.client.Prices != nil {
		return c.client.Prices
	}
	return llm.DefaultPriceTable()
}

// Ceiling is the most one answer may cost: the request's text counted at
// a token per byte (no token is shorter than a byte), and all of
// max_tokens as output.
func (c *Resolver) Ceiling(ctx context.Context, t *loop.Call) float64 {
	sys, user, err := c.prompt(t)
	if err != nil {
		return 0
	}
	cost, _ := c.prices().Cost(t.Model, llm.Usage{InputTokens: len(sys) + len(user) + schemaBytes + framingTokens, OutputTokens: maxTokens})
	return cost
}

// schemaBytes bounds the size of the JSON Schema AskJSON sends with an
// operation (the largest answer type's).
var schemaBytes = func() int {
	n := 0
	for _, s := range []func() (*llm.Schema, error){llm.SchemaFor[loop.IdentifyAnswer], llm.SchemaFor[loop.SelectAnswer], llm.SchemaFor[loop.RouteAnswer],
		llm.SchemaFor[loop.ResolveAnswer], llm.SchemaFor[loop.VerifyAnswer], llm.SchemaFor[loop.DecomposeAnswer], llm.SchemaFor[loop.GapAnswer],
		llm.SchemaFor[loop.ConsistencyAnswer], llm.SchemaFor[loop.AssembleAnswer], llm.SchemaFor[loop.SynthesizeAnswer]} {
		if sc, err := s(); err == nil {
			n = max(n, len(sc.JSON))
		}
	}
	return n
}()

// capped fits a request under the call's MaxCost: max_tokens lowered so
// that the answer's worst case (Ceiling's count of the input, all of
// max_tokens as output) costs no more than was reserved, and no repair
// turn (each would be another answer; the loop's own retry re-asks with
// the failure quoted, under a new reservation). A call whose reservation
// cannot pay for its input is not sent.
func (c *Resolver) capped(t *loop.Call, req *llm.Request, sys, user string) (llm.JSONOptions, error) {
	p, ok := c.prices().Lookup(t.Model)
	if t.MaxCost <= 0 || !ok || p.Output <= 0 {
		return llm.JSONOptions{}, nil
	}
	const perToken = 1e-6
	in := float64(len(sys)+len(user)+schemaBytes+framingTokens) * p.Input * perToken
	n := math.Floor((t.MaxCost - in) / (p.Output * perToken))
	if n < 1 {
		return llm.JSONOptions{}, loop.Permanent("over_budget", fmt.Errorf("claude-code-0: $%.6f reserved does not pay for the request's input ($%.6f at most)", t.MaxCost, in))
	}
	req.MaxTokens = int(math.Min(n, maxTokens))
	return llm.JSONOptions{Repairs: -1}, nil
}

// Resolve asks the model for the operation's answer.
func (c *Resolver) Resolve(ctx context.Context, t *loop.Call) (*loop.Output, error) {
	if c.client == nil {
		return nil, loop.Permanent("no_llm", errors.New("claude-code-0 has no LLM client: the kernel was opened without a provider"))
	}
	sys, user, err := c.prompt(t)
	if err != nil {
		return nil, loop.Permanent("invalid_format", err)
	}
	req := &llm.Request{Model: t.Model, MaxTokens: maxTokens, System: []llm.SystemBlock{{Type: llm.BlockText, Text: sys}}, Messages: []llm.Message{llm.UserText(user)}}
	opts, err := c.capped(t, req, sys, user)
	if err != nil {
		return nil, err
	}
	switch t.Op {
	case loop.OpIdentify:
		return ask[loop.IdentifyAnswer](ctx, c.client, req, opts)
	case loop.OpSelect:
		return ask[loop.SelectAnswer](ctx, c.client, req, opts)
	case loop.OpRoute:
		return ask[loop.RouteAnswer](ctx, c.client, req, opts)
	case loop.OpResolve:
		return ask[loop.ResolveAnswer](ctx, c.client, req, opts)
	case loop.OpVerify:
		return ask[loop.VerifyAnswer](ctx, c.client, req, opts)
	case loop.OpDecompose:
		return ask[loop.DecomposeAnswer](ctx, c.client, req, opts)
	case loop.OpGap:
		return ask[loop.GapAnswer](ctx, c.client, req, opts)
	case loop.OpConsistency:
		return ask[loop.ConsistencyAnswer](ctx, c.client, req, opts)
	case loop.OpAssemble:
		return ask[loop.AssembleAnswer](ctx, c.client, req, opts)
	case loop.OpSynthesize:
		return ask[loop.SynthesizeAnswer](ctx, c.client, req, opts)
	}
	return nil, loop.Permanent("capability_mismatch", fmt.Errorf("claude-code-0 does not do operation %q", t.Op))
}

// ask is one structured answer of type T, with its cost. Only what may
// succeed if sent again is retryable: an overloaded, rate-limited or
// unreachable API (llm.APIError.Retryable). A malformed answer, a request
// the API refuses, and a request that cannot be sent at all (no model, a
// request llm.CheckRequest rejects) are permanent; the caller's
// cancellation or deadline is returned as it is.
func ask[T any](ctx context.Context, c *llm.Client, req *llm.Request, opts llm.JSONOptions) (*loop.Output, error) {
	began := time.Now()
	v, calls, err := llm.AskJSON[T](ctx, c, req, opts)
	out := &loop.Output{Seconds: time.Since(began).Seconds(), LLMCalls: len(calls)}
	for _, call := range calls {
		out.Cost += call.CostUSD
	}
	fail := func(permanent bool, mode string, err error) error {
		return &loop.ResolverError{Permanent: permanent, Mode: mode, Err: err, Cost: out.Cost, Seconds: out.Seconds, LLMCalls: len(calls),
			NotInFlight: errors.Is(err, llm.ErrNotInFlight)}
	}
	if err != nil {
		var soe *llm.StructuredOutputError
		ae, isAPI := llm.AsAPIError(err)
		switch {
		case errors.As(err, &soe):
			return nil, fail(true, "malformed_json", err)
		case isAPI && ae.Retryable():
			return nil, fail(false, "llm_unavailable", err)
		case isAPI:
			return nil, fail(true, "llm_error", err)
		case ctx.Err() != nil:
			return nil, fail(false, "cancelled", err)
		}
		return nil, fail(true, "invalid_request", err)
	}
	if out.Answer, err = json.Marshal(v); err != nil {
		return nil, fail(true, "malformed_json", err)
	}
	return out, nil
}
