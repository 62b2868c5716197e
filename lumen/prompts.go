package lumen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/lumen/memory"
)

var placeholder = regexp.MustCompile(`\{\{\s*([a-z_]+)\s*\}\}`)

// template reads prompts/<step>/<file> from the instance; a file the user
// deleted falls back to the built-in default, with a warning.
func (in *Instance) template(step, file string) (string, error) {
	path := filepath.Join(in.Root, "prompts", step, file)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		data, err = fs.ReadFile(defaults, "prompts/"+step+"/"+file)
		if err == nil {
			in.opts.Logger.Warn("prompt template missing from the instance: using the built-in default", "path", path)
		}
	}
	if err != nil {
		return "", fmt.Errorf("prompt %s/%s: %w", step, file, err)
	}
	return string(data), nil
}

// render substitutes {{name}} with vars[name]. A name with no value is an
// error naming the template and the names it may use.
func render(where, tmpl string, vars map[string]string) (string, error) {
	var missing []string
	out := placeholder.ReplaceAllStringFunc(tmpl, func(m string) string {
		name := placeholder.FindStringSubmatch(m)[1]
		v, ok := vars[name]
		if !ok {
			missing = append(missing, name)
			return m
		}
		return v
	})
	if len(missing) > 0 {
		var names []string
		for _, k := range slices.Sorted(maps.Keys(vars)) {
			names = append(names, "{{"+k+"}}")
		}
		return "", fmt.Errorf("prompt %s uses {{%s}}, which this step does not provide; it may use %s", where, strings.Join(missing, "}}, {{"), strings.Join(names, " "))
	}
	return out, nil
}

// prompt renders a step's system and user prompt.
func (in *Instance) prompt(step string, vars map[string]string) (string, string, error) {
	sys, err := in.template(step, "system.md")
	if err != nil {
		return "", "", err
	}
	user, err := in.template(step, "prompt.md")
	if err != nil {
		return "", "", err
	}
	if sys, err = render(step+"/system.md", sys, vars); err != nil {
		return "", "", err
	}
	if user, err = render(step+"/prompt.md", user, vars); err != nil {
		return "", "", err
	}
	return sys, user, nil
}

// Usage adds up what a step's LLM calls cost.
type Usage struct {
	Calls   int     `json:"calls"`
	CostUSD float64 `json:"cost_usd"`
}

func (u *Usage) add(calls []*llm.Call) {
	for _, c := range calls {
		u.Calls++
		u.CostUSD += c.CostUSD
	}
}

func (in *Instance) request(system, user string) (*llm.Request, error) {
	if in.opts.Client == nil {
		return nil, errors.New("no LLM configured: the loops need a provider (--provider, --model; docs/configuration.md)")
	}
	return &llm.Request{
		Model:     in.opts.Model,
		MaxTokens: in.opts.MaxTokens,
		System:    []llm.SystemBlock{{Type: llm.BlockText, Text: system}},
		Messages:  []llm.Message{llm.UserText(user)},
	}, nil
}

// ask runs one step as a structured-output call: the step's prompts with
// vars, the answer parsed into T (malformed JSON is sent back for repair).
func ask[T any](ctx context.Context, in *Instance, step string, vars map[string]string, u *Usage) (T, error) {
	var zero T
	sys, user, err := in.prompt(step, vars)
	if err != nil {
		return zero, err
	}
	req, err := in.request(sys, user)
	if err != nil {
		return zero, err
	}
	v, calls, err := llm.AskJSON[T](ctx, in.opts.Client, req, llm.JSONOptions{})
	u.add(calls)
	if err != nil {
		return zero, fmt.Errorf("step %s: %w", step, err)
	}
	return v, nil
}

// Initial weights of new memories, by author.
func initialWeight(author string) float64 {
	switch author {
	case memory.External:
		return 0.8
	case memory.Self:
		return 0.7
	case memory.Goal:
		return 0.6
	}
	return 0.3
}

// remember appends a memory; data (any JSON-able value) goes in its data
// field. The kernel cannot skip these: a failed write fails the step.
func (in *Instance) remember(author, step, situation, description string, data any) (string, error) {
	return in.rememberUsed(author, step, situation, description, data, nil)
}

// rememberUsed is remember for a step that used the memories in used:
// writing it strengthens them.
func (in *Instance) rememberUsed(author, step, situation, description string, data any, used []string) (string, error) {
	m := memory.Memory{Timestamp: in.opts.Now(), Author: author, Weight: initialWeight(author),
		Situation: situation, Description: description, Step: step, Used: used}
	if data != nil {
		raw, err := json.Marshal(data)
		if err != nil {
			return "", fmt.Errorf("memory data for step %s: %w", step, err)
		}
		m.Data = raw
	}
	return in.mem.Append(m)
}
