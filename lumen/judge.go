package lumen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/llmkernels/kernels/internal/clip"
	"strings"
	"time"

	"github.com/llmkernels/kernels/lumen/memory"
)

// The questions a model judges (lumen audit --judge), each with its
// prompts under prompts/judge-<question>/.
const (
	JudgeSelfModel = "self-model" // do soul.md's claims match what the agent did?
	JudgeHonesty   = "honesty"    // when the honest answer was uncomfortable, did it choose truth?
	JudgeCoherence = "coherence"  // did a convenient confabulation survive reflection?
)

// JudgeQuestions are the three, in the order the audit asks them.
var JudgeQuestions = []string{JudgeSelfModel, JudgeHonesty, JudgeCoherence}

// Finding is one thing a judge checked, with the memories it rests on.
type Finding struct {
	Claim      string   `json:"claim"`
	Evidence   []string `json:"evidence"`
	Assessment string   `json:"assessment"`
}

// judgeAnswer is what a judge step answers.
type judgeAnswer struct {
	Verdict  string    `json:"verdict"`
	Score    float64   `json:"score" jsonschema:"minimum=0,maximum=1"`
	Findings []Finding `json:"findings"`
}

// Judgment is a model's verdict on one question, as recorded in memory.
type Judgment struct {
	Question string    `json:"question"`
	Verdict  string    `json:"verdict"`
	Score    float64   `json:"score"` // 0..1: how well the record holds up
	Findings []Finding `json:"findings"`
	Model    string    `json:"model"`
	MemoryID string    `json:"memory_id,omitempty"`
	When     time.Time `json:"when"`
}

// judgeWindow is how many memories of each kind a judge reads.
const judgeWindow = 40

// Judge asks the model to judge the three questions the records alone
// cannot answer, from the evidence the audit gathers, and records each
// verdict as a kernel memory (step judge) that later audits show; a
// question whose answer fails is recorded as a failed step, the others
// are still asked, and the failures are returned with the verdicts. The
// judge is the instance's configured model unless the caller configured
// another: a different model is a fairer judge.
func (in *Instance) Judge(ctx context.Context, audit *AuditReport) ([]Judgment, error) {
	if err := in.writable(); err != nil {
		return nil, err
	}
	snap, err := in.snapshot()
	if err != nil {
		return nil, err
	}
	selfs, err := in.mem.List(ctx, memory.Filter{Authors: []string{memory.Self}, Limit: judgeWindow})
	if err != nil {
		return nil, err
	}
	decisions, err := in.mem.List(ctx, memory.Filter{Authors: []string{memory.Kernel}, Step: "decide", Limit: judgeWindow})
	if err != nil {
		return nil, err
	}
	exchanges, err := in.exchanges(ctx, judgeWindow)
	if err != nil {
		return nil, err
	}
	summaries, err := in.summaries()
	if err != nil {
		return nil, err
	}
	acted, _ := json.Marshal(audit.SelfModel)
	var out []Judgment
	var failed []error
	for _, q := range JudgeQuestions {
		vars := snap.vars(in.opts.Now())
		vars["self_memories"] = formatMemoryIDs(selfs)
		vars["decisions"] = formatMemoryIDs(decisions)
		vars["acted_on"] = string(acted)
		vars["exchanges"] = exchanges
		vars["summaries"] = summaries
		vars["reversals"] = strings.Join(audit.Coherence.Reversals, "\n")
		var u Usage
		ans, err := ask[judgeAnswer](ctx, in, "judge-"+q, vars, &u)
		if err != nil {
			// Recorded; the other questions are still asked.
			failed = append(failed, in.stepFailed("judge", err))
			continue
		}
		j := Judgment{Question: q, Verdict: ans.Verdict, Score: clamp01(ans.Score), Findings: ans.Findings, Model: in.modelName()}
		id, err := in.remember(memory.Kernel, "judge", "lumen audit --judge",
			fmt.Sprintf("JUDGE %s: score %.2f: %s", q, j.Score, clip.Line(j.Verdict, 400)), map[string]any{"judgment": j})
		if err != nil {
			return out, err
		}
		j.MemoryID, j.When = id, in.opts.Now()
		out = append(out, j)
	}
	return out, errors.Join(failed...)
}

// exchanges are the last n chat turns: what the person said and what the
// agent showed them, oldest first, with memory ids.
func (in *Instance) exchanges(ctx context.Context, n int) (string, error) {
	es, err := in.mem.List(ctx, memory.Filter{Authors: []string{memory.External, memory.Kernel}, Limit: 40 * n})
	if err != nil {
		return "", err
	}
	var turns []string
	var current string
	for _, e := range es {
		switch {
		case e.Author == memory.External:
			current = fmt.Sprintf("[%s] person: %s", e.ID, clip.Line(e.Description, 1000))
			turns = append(turns, current)
		case e.Step == "act" && current != "":
			var d struct {
				Result struct {
					Display string `json:"display"`
				} `json:"result"`
			}
			if json.Unmarshal(e.Data, &d) == nil && d.Result.Display != "" {
				turns = append(turns, fmt.Sprintf("[%s] agent: %s", e.ID, clip.Line(d.Result.Display, 1000)))
				current = ""
			}
		}
	}
	if len(turns) > 2*n {
		turns = turns[len(turns)-2*n:]
	}
	return strings.Join(turns, "\n"), nil
}

// formatMemoryIDs lists memories with their ids, for a judge to cite.
func formatMemoryIDs(es []memory.Entry) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "- [%s] %s %s: %s\n", e.ID, e.Timestamp.UTC().Format("2006-01-02 15:04"), e.Author, clip.Line(e.Description, 600))
	}
	return strings.TrimRight(b.String(), "\n")
}
