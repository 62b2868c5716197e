package solve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/atomicfile"
	"github.com/llmkernels/kernels/internal/proc"
	"github.com/llmkernels/kernels/llm"
)

// claudeCode is claude-code-0: the LLM adapter. One prompt template per
// operation (prompts/op_<operation>.md, first line "SOLVE kernel ·
// operation: <op>"), the user turn rendered from the Call by op_user.md
// (goal, constraints as c1…, inputs, KG history block, feedback), and a
// structured JSON answer per operation through llm.AskJSON.
type claudeCode struct {
	client *llm.Client
}

// outputTokensEstimate is the answer size assumed by estimate_cost_time.
const outputTokensEstimate = 1000

func (c *claudeCode) prompt(t *Call) (sys, user string, err error) {
	if sys, err = render("op_"+t.Op+".md", nil); err != nil {
		return "", "", fmt.Errorf("claude-code-0: no prompt template for operation %q: %w", t.Op, err)
	}
	user, err = render("op_user.md", t)
	return sys, user, err
}

func (c *claudeCode) Estimate(ctx context.Context, t *Call) (float64, float64) {
	sys, user, err := c.prompt(t)
	if err != nil {
		return 0, 0
	}
	prices := c.client.Prices
	if prices == nil {
		prices = llm.DefaultPrices
	}
	cost, _ := prices.Cost(t.Model, llm.Usage{InputTokens: (len(sys) + len(user) + 2000) / 4, OutputTokens: outputTokensEstimate})
	return cost, 30
}

func (c *claudeCode) Resolve(ctx context.Context, t *Call) (*Output, error) {
	if c.client == nil {
		return nil, permanent("no_llm", errors.New("claude-code-0 has no LLM client; give --provider (and --script for scripted runs)"))
	}
	sys, user, err := c.prompt(t)
	if err != nil {
		return nil, permanent("invalid_format", err)
	}
	req := &llm.Request{Model: t.Model, MaxTokens: 8000, System: []llm.SystemBlock{{Type: llm.BlockText, Text: sys}}, Messages: []llm.Message{llm.UserText(user)}}
	switch t.Op {
	case OpIdentify:
		return askOp[identifyAnswer](ctx, c.client, req)
	case OpSelect:
		return askOp[selectAnswer](ctx, c.client, req)
	case OpRoute:
		return askOp[routeAnswer](ctx, c.client, req)
	case OpResolve:
		return askOp[resolveAnswer](ctx, c.client, req)
	case OpVerify:
		return askOp[verifyAnswer](ctx, c.client, req)
	case OpDecompose:
		return askOp[decomposeAnswer](ctx, c.client, req)
	case OpGap:
		return askOp[gapAnswer](ctx, c.client, req)
	case OpConsistency:
		return askOp[consistencyAnswer](ctx, c.client, req)
	case OpAssemble:
		return askOp[assembleAnswer](ctx, c.client, req)
	case OpSynthesize:
		return askOp[synthesizeAnswer](ctx, c.client, req)
	}
	return nil, permanent("capability_mismatch", fmt.Errorf("claude-code-0 does not do operation %q", t.Op))
}

func askOp[T any](ctx context.Context, c *llm.Client, req *llm.Request) (*Output, error) {
	began := time.Now()
	v, calls, err := llm.AskJSON[T](ctx, c, req, llm.JSONOptions{})
	out := &Output{Seconds: time.Since(began).Seconds(), LLMCalls: len(calls)}
	for _, call := range calls {
		out.Cost += call.CostUSD
	}
	if err != nil {
		var soe *llm.StructuredOutputError
		if errors.As(err, &soe) {
			return nil, &ResolverError{Permanent: true, Mode: "malformed_json", Err: err, Cost: out.Cost, Seconds: out.Seconds}
		}
		if ae, ok := llm.AsAPIError(err); ok && !ae.Retryable() {
			return nil, &ResolverError{Permanent: true, Mode: "llm_error", Err: err, Cost: out.Cost, Seconds: out.Seconds}
		}
		return nil, &ResolverError{Mode: "llm_unavailable", Err: err, Cost: out.Cost, Seconds: out.Seconds}
	}
	out.Answer, _ = json.Marshal(v)
	return out, nil
}

// Subprocess limits of codex-tools-0 and command tools.
const (
	commandTimeout  = 2 * time.Minute
	outputCapBytes  = 16 << 10
	commandInvokeID = "command"
)

// codexTools is codex-tools-0: commands, file operations and test suites
// in the workspace, as a subprocess with a timeout and an output cap.
type codexTools struct {
	costPerInvocation float64
}

func (c *codexTools) Estimate(ctx context.Context, t *Call) (float64, float64) {
	return c.costPerInvocation, 60
}

// checkAnswer is a command's outcome.
type checkAnswer struct {
	Passed   bool    `json:"passed"`
	ExitCode int     `json:"exit_code"`
	Output   string  `json:"output"`
	Seconds  float64 `json:"seconds"`
}

func (c *codexTools) Resolve(ctx context.Context, t *Call) (*Output, error) {
	command, _ := t.Params[commandInvokeID].(string)
	if command == "" {
		return nil, permanent("capability_mismatch", fmt.Errorf("codex-tools-0: operation %s needs a command in the plan's params", t.Op))
	}
	if t.Workspace == "" {
		return nil, permanent("no_workspace", errors.New("codex-tools-0 needs a workspace directory: give --workspace DIR"))
	}
	if t.Output != nil {
		if err := writeFiles(t.Workspace, t.Output); err != nil {
			return nil, permanent("file_ops", err)
		}
	}
	res := runCommand(ctx, t.Workspace, command, nil)
	out := &Output{Cost: c.costPerInvocation, Seconds: res.Seconds}
	if t.Op == OpCheck {
		out.Answer, _ = json.Marshal(res)
		return out, nil
	}
	ans := resolveAnswer{Summary: fmt.Sprintf("ran %q: exit %d", command, res.ExitCode), Text: res.Output}
	if p, _ := t.Params["output_path"].(string); p != "" {
		ans.Files = []fileOut{{Path: p, Content: res.Output}}
	}
	out.Answer, _ = json.Marshal(ans)
	if !res.Passed {
		return nil, &ResolverError{Permanent: true, Mode: "command_failed", Err: fmt.Errorf("%q exited %d: %s", command, res.ExitCode, res.Output), Cost: out.Cost, Seconds: out.Seconds}
	}
	return out, nil
}

// runCommand runs sh -c command in dir through the one subprocess runner
// (internal/proc): its whole process group is killed at the timeout and
// with the kernel, output (stdout+stderr) is capped, and provider secrets
// are not passed on.
func runCommand(ctx context.Context, dir, command string, env []string) checkAnswer {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	r, err := proc.Run(ctx, proc.Cmd{Name: "sh", Args: []string{"-c", command}, Dir: dir, Env: env, MergeStderr: true, MaxOutput: outputCapBytes})
	if err != nil {
		return checkAnswer{ExitCode: -1, Output: err.Error()}
	}
	res := checkAnswer{Passed: r.OK(), ExitCode: r.ExitCode, Output: string(r.Stdout), Seconds: r.Duration.Seconds()}
	if r.StdoutDropped > 0 {
		res.Output += fmt.Sprintf("\n[output cut: %d more bytes]", r.StdoutDropped)
	}
	switch {
	case errors.Is(r.Stopped, context.DeadlineExceeded):
		res.Output += fmt.Sprintf("\n[killed after the %s timeout]", commandTimeout)
	case r.Signal != "":
		res.Output += "\n[" + r.Err().Error() + "]"
	}
	return res
}

// writeFiles writes an output artifact's files into the workspace, each
// atomically, refusing paths that leave it.
func writeFiles(workspace string, a *ArtifactView) error {
	var ans resolveAnswer
	if a.Format != "json" || json.Unmarshal([]byte(a.Content), &ans) != nil {
		return nil
	}
	for _, f := range ans.Files {
		if err := writeFile(workspace, f); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(dir string, f fileOut) error {
	p := filepath.Join(dir, filepath.Clean("/"+f.Path))
	if f.Path == "" || !strings.HasPrefix(p, filepath.Clean(dir)+string(filepath.Separator)) {
		return fmt.Errorf("file path %q leaves the workspace %s; give a relative path inside it", f.Path, dir)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(p, []byte(f.Content), 0o644)
}

// commandTool is a built or hired resolver: a command the workspace can
// run. A built tool's files (an artifact) are materialized under
// <workspace>/.solve/tools/<id>/ and passed as $SOLVE_TOOL_DIR.
type commandTool struct {
	k     *Kernel
	entry ResolverEntry
}

func (c *commandTool) Estimate(ctx context.Context, t *Call) (float64, float64) {
	return c.entry.CostPerInvocation, max(c.entry.LatencyEstimate, 1)
}

func (c *commandTool) Resolve(ctx context.Context, t *Call) (*Output, error) {
	command, _ := c.entry.Metadata["command"].(string)
	if t.Workspace == "" {
		return nil, permanent("no_workspace", fmt.Errorf("resolver %s needs a workspace directory: give --workspace DIR", c.entry.ID))
	}
	var env []string
	if art, _ := c.entry.Metadata["tool_artifact_id"].(string); art != "" {
		dir, err := c.k.materializeTool(ctx, art, filepath.Join(t.Workspace, ".solve", "tools", c.entry.ID))
		if err != nil {
			return nil, permanent("tool_missing", err)
		}
		env = append(env, "SOLVE_TOOL_DIR="+dir)
	}
	res := runCommand(ctx, t.Workspace, command, env)
	out := &Output{Cost: c.entry.CostPerInvocation, Seconds: res.Seconds}
	ans := resolveAnswer{Summary: fmt.Sprintf("%s ran %q: exit %d", c.entry.ID, command, res.ExitCode), Text: res.Output}
	if p, _ := t.Params["output_path"].(string); p != "" {
		ans.Files = []fileOut{{Path: p, Content: res.Output}}
	}
	if !res.Passed {
		return nil, &ResolverError{Permanent: true, Mode: "command_failed", Err: fmt.Errorf("%q exited %d: %s", command, res.ExitCode, res.Output), Cost: out.Cost, Seconds: out.Seconds}
	}
	out.Answer, _ = json.Marshal(ans)
	return out, nil
}

// materializeTool writes a tool artifact's files into dir.
func (k *Kernel) materializeTool(ctx context.Context, artifactID, dir string) (string, error) {
	_, data, err := k.artifact(ctx, k.db, artifactID)
	if err != nil {
		return "", err
	}
	var ans resolveAnswer
	if err := json.Unmarshal(data, &ans); err != nil {
		return "", fmt.Errorf("tool artifact %s is not a files answer: %w", artifactID, err)
	}
	for _, f := range ans.Files {
		if err := writeFile(dir, f); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// selfModel is self-model-0: answers from the registry, ledger and node
// store. Its operation is self_model: the routing candidates for required
// capabilities, with the registry's record.
type selfModel struct{ k *Kernel }

func (s *selfModel) Estimate(ctx context.Context, t *Call) (float64, float64) { return 0, 0 }

func (s *selfModel) Resolve(ctx context.Context, t *Call) (*Output, error) {
	if t.Op != OpSelfModel {
		return nil, permanent("capability_mismatch", fmt.Errorf("self-model-0 does not do operation %q", t.Op))
	}
	var req []string
	if caps, ok := t.Params["capabilities"].([]string); ok {
		req = caps
	}
	cands, err := s.k.candidates(ctx, req)
	if err != nil {
		return nil, err
	}
	out := &Output{}
	out.Answer, _ = json.Marshal(cands)
	return out, nil
}
