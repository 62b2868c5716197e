// Package tool is what the instance's tool adapters share: a tool's input
// decoded as sent, its answer as JSON, its input schema, and text from
// outside the instance made inert before it reaches the LLM.
package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/llm"
)

// Schema builds an object schema from property JSON and required names.
func Schema(props string, required ...string) json.RawMessage {
	if len(required) == 0 {
		return json.RawMessage(`{"type":"object","properties":{` + props + `}}`)
	}
	req, _ := json.Marshal(required)
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(req) + `}`)
}

// Decode reads a tool's input, keeping numbers as written (so an address
// sent as a number keeps what digits JSON kept).
func Decode(in json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(in))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("input is not the expected JSON object: %w", err)
	}
	return nil
}

// JSON answers v as JSON text.
func JSON(v any) (llm.ToolOutput, error) {
	data, err := llm.MarshalWire(v)
	if err != nil {
		return llm.ToolOutput{}, err
	}
	return llm.TextOutput(string(data)), nil
}

// Func adapts a handler that takes its decoded arguments and returns a
// value to answer as JSON.
func Func[A any](run func(context.Context, A) (any, error)) llm.ToolFunc {
	return func(ctx context.Context, in json.RawMessage) (llm.ToolOutput, error) {
		var args A
		if err := Decode(in, &args); err != nil {
			return llm.ToolOutput{}, err
		}
		v, err := run(ctx, args)
		if err != nil {
			return llm.ToolOutput{}, err
		}
		return JSON(v)
	}
}

// Inert wraps a tool whose result carries text from outside the instance
// (a web page, a beach, another agent) so that it reaches the LLM inert,
// as the foreign text of a wake message does: control characters,
// escape sequences, C1 and bidirectional controls are shown as escapes
// (termtext.Block; line breaks and tabs kept). A JSON result stays valid
// JSON: each of its strings is made inert, so what it decodes to is inert
// too. An error, which may quote the same text, is made inert as one line.
// The person's own data (clipboard, files, speech, through the browser
// tools) is theirs, and reaches the LLM as it is.
func Inert(run llm.ToolFunc) llm.ToolFunc {
	return func(ctx context.Context, in json.RawMessage) (llm.ToolOutput, error) {
		out, err := run(ctx, in)
		if err != nil {
			return out, inertError{err}
		}
		out.Content.Text = inertText(out.Content.Text)
		for i, b := range out.Content.Blocks {
			if b.Type == llm.BlockText {
				out.Content.Blocks[i].Text = inertText(b.Text)
			}
		}
		return out, nil
	}
}

// inertText is termtext.Block of text, or of each string of text when it
// is JSON (the whole text through termtext would write DEL as \x7f, which
// JSON does not have).
func inertText(text string) string {
	if !json.Valid([]byte(text)) {
		return termtext.Block(text)
	}
	var b strings.Builder
	for i := 0; i < len(text); {
		if text[i] != '"' {
			b.WriteByte(text[i])
			i++
			continue
		}
		end := i + 1 // the closing quote: the first not escaped
		for text[end] != '"' {
			if text[end] == '\\' {
				end++
			}
			end++
		}
		var s string
		_ = json.Unmarshal([]byte(text[i:end+1]), &s) // a string of valid JSON
		q, _ := llm.MarshalWire(termtext.Block(s))    // a string always encodes
		b.Write(q)
		i = end + 1
	}
	return b.String()
}

// inertError is a tool's error made inert (see Inert).
type inertError struct{ err error }

func (e inertError) Error() string { return termtext.Line(e.err.Error()) }
func (e inertError) Unwrap() error { return e.err }
