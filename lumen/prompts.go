package lumen

import (
	"context"
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

// placeholderRE matches {{name}} and {{name|text}}: text stands in when
// the variable is empty, so what the LLM reads about an empty value lives
// in the template too.
var placeholderRE = regexp.MustCompile(`\{\{\s*([a-z_]+)\s*(?:\|([^}]*))?\}\}`)

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

// render substitutes {{name}} with vars[name], and {{name|text}} with
// text when vars[name] is empty. A name the step does not provide is an
// error naming the template and the names it may use.
func render(where, tmpl string, vars map[string]string) (string, error) {
	var missing []string
	out := placeholderRE.ReplaceAllStringFunc(tmpl, func(m string) string {
		sub := placeholderRE.FindStringSubmatch(m)
		v, ok := vars[sub[1]]
		if !ok {
			missing = append(missing, sub[1])
			return m
		}
		if strings.TrimSpace(v) == "" && sub[2] != "" {
			return sub[2]
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

// Usage is what LLM calls cost: calls, tokens and US dollars.
type Usage = memory.Usage

// callUsage adds up calls.
func callUsage(calls []*llm.Call) Usage {
	var u Usage
	for _, c := range calls {
		u.Add(Usage{Calls: 1, InputTokens: c.Usage.InputTokens + c.Usage.CacheCreationInputTokens + c.Usage.CacheReadInputTokens,
			OutputTokens: c.Usage.OutputTokens, CostUSD: c.CostUSD})
	}
	return u
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
// What the calls cost is added to u and to the spend the next memory line
// records, failed attempts included.
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
	opts, err := in.jsonOptions()
	if err != nil {
		return zero, fmt.Errorf("step %s: %w", step, err)
	}
	v, calls, err := llm.AskJSON[T](ctx, in.opts.Client, req, opts)
	in.charge(calls, u)
	if err != nil {
		return zero, fmt.Errorf("step %s: %w", step, err)
	}
	return v, nil
}

// jsonOptions words the structured-output call from the instance's
// prompts/json/instruction.md ({{schema}}: the JSON Schema document the
// answer is checked against) and prompts/json/repair.md ({{problems}}: what
// was wrong, one "- " line each), so this text is as editable as every
// other prompt. Both are rendered once here so that a template naming an
// unknown variable fails the step before any call is paid for. The schema
// itself and the problem lines stay in Go: the schema is what the answer
// is validated against, and the problems are the validator's findings.
func (in *Instance) jsonOptions() (llm.JSONOptions, error) {
	instruction, err := in.template("json", "instruction.md")
	if err != nil {
		return llm.JSONOptions{}, err
	}
	repair, err := in.template("json", "repair.md")
	if err != nil {
		return llm.JSONOptions{}, err
	}
	if _, err := render("json/instruction.md", instruction, map[string]string{"schema": "{}"}); err != nil {
		return llm.JSONOptions{}, err
	}
	if _, err := render("json/repair.md", repair, map[string]string{"problems": "- ?"}); err != nil {
		return llm.JSONOptions{}, err
	}
	// The renders below cannot fail: the same templates and variable names
	// were rendered above. A file's final newline is not part of the text.
	return llm.JSONOptions{
		Instruction: func(schema string) string {
			out, _ := render("json/instruction.md", instruction, map[string]string{"schema": schema})
			return strings.TrimRight(out, "\n")
		},
		Repair: func(problems []string) string {
			out, _ := render("json/repair.md", repair, map[string]string{"problems": "- " + strings.Join(problems, "\n- ")})
			return strings.TrimRight(out, "\n")
		},
	}, nil
}
