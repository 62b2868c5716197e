package lumen

import (
	"encoding/json"
	"testing"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/script"
)

// step is one scripted answer for a step (matched by its prompt marker),
// with the tokens it reports.
type step struct {
	name string
	v    any // marshalled to JSON; a string is sent as is (malformed answers)
	in   int // input tokens
	out  int // output tokens
}

// answer scripts step's JSON answer v.
func answer(name string, v any) step { return step{name: name, v: v, in: 1000, out: 100} }

// estimated scripts step's JSON answer v with the usage the script's
// simulated prompt cache estimates: what was read from the cache and
// written to it.
func estimated(name string, v any) step { return step{name: name, v: v} }

// scripted builds a script provider from steps, in order.
func scripted(t testing.TB, steps ...step) *script.Provider {
	t.Helper()
	p, err := buildScript(steps)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func buildScript(steps []step) (*script.Provider, error) {
	sc, err := buildScriptJSON(steps)
	if err != nil {
		return nil, err
	}
	return script.New(sc), nil
}

// buildScriptJSON is the script of steps, each answer matched to its
// step's prompt.
func buildScriptJSON(steps []step) (*script.Script, error) {
	var entries []any
	for _, s := range steps {
		text, ok := s.v.(string)
		if !ok {
			data, err := json.Marshal(s.v)
			if err != nil {
				return nil, err
			}
			text = string(data)
		}
		response := map[string]any{"content": []map[string]any{{"type": "text", "text": text}}}
		if s.in > 0 {
			response["usage"] = map[string]any{"input_tokens": s.in, "output_tokens": s.out}
		}
		entries = append(entries, map[string]any{
			"match":    map[string]any{"system_contains": "step: " + s.name},
			"response": response,
		})
	}
	data, err := json.Marshal(map[string]any{"responses": entries})
	if err != nil {
		return nil, err
	}
	return script.Parse(data)
}

// withScript points the instance at p as its LLM.
func withScript(p *script.Provider) func(*Options) {
	return func(o *Options) { o.Client = &llm.Client{Provider: p} }
}

// chatSay is a THINK candidate that answers through the chat skill.
func chatSay(msg string) Candidate {
	input, _ := json.Marshal(map[string]string{"message": msg})
	return Candidate{Action: "say " + msg, Skill: "chat", Input: input, Predicted: "it is shown", Counterfactual: "silence"}
}

func thinkOf(cs ...Candidate) thought { return thought{Situation: "a moment", Candidates: cs} }

func decideAll(values, goals []string, direct bool, n int) decision {
	if values == nil {
		values = []string{}
	}
	if goals == nil {
		goals = []string{}
	}
	d := decision{Rationale: "because"}
	for i := 1; i <= n; i++ {
		d.Alignments = append(d.Alignments, Alignment{Candidate: i, Values: values, Goals: goals, Direct: direct})
		d.Preference = append(d.Preference, i)
	}
	return d
}

var recorded = recordAnswer{Outcome: "as planned", Delta: 0.1, DeltaExplanation: "close", Changes: []Change{}}

var noTrigger = triggerAnswer{TensionValues: []string{}}
