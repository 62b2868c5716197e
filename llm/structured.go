package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"
	validator "github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/llmkernels/kernels/internal/clip"
)

var englishPrinter = message.NewPrinter(language.English)

// StructuredOutputError is the final failure of AskJSON: the model's last
// answer and why it did not fit the schema.
type StructuredOutputError struct {
	Raw      string   // the model's last answer, as it wrote it
	Errors   []string // what was wrong with it
	Attempts int
}

func (e *StructuredOutputError) Error() string {
	return fmt.Sprintf("llm: no valid JSON after %d attempts: %s; last answer: %s",
		e.Attempts, strings.Join(e.Errors, "; "), clip.Line(e.Raw, 200))
}

// JSONOptions tunes AskJSON.
type JSONOptions struct {
	// Repairs is how many times a non-conforming answer is sent back with
	// the validation errors quoted; default 2, -1 for none.
	Repairs int
	// Instruction writes the system-prompt block that asks for JSON
	// matching the schema document; nil for DefaultInstruction. A kernel
	// whose prompt text lives in editable templates (lumen) supplies its
	// own; the schema document itself is always the one the answer is
	// checked against.
	Instruction func(schema string) string
	// Repair writes the user turn that sends a non-conforming answer back,
	// given what was wrong with it; nil for DefaultRepair.
	Repair func(problems []string) string
}

// DefaultInstruction is the system-prompt block AskSchema adds when
// JSONOptions.Instruction is nil.
func DefaultInstruction(schema string) string {
	return "Answer with one JSON value and nothing else, matching this JSON Schema:\n" + schema
}

// DefaultRepair is the user turn AskSchema sends back with a
// non-conforming answer when JSONOptions.Repair is nil.
func DefaultRepair(problems []string) string {
	return "Your answer does not match the schema:\n- " + strings.Join(problems, "\n- ") + "\nAnswer again with only the corrected JSON."
}

// Schema is a compiled JSON Schema for a Go type.
type Schema struct {
	JSON      json.RawMessage // the schema document, as shown to the model
	validator *validator.Schema
}

// SchemaFor generates the JSON Schema of T from its fields and json tags
// (fields without omitempty are required; unknown fields are not allowed)
// and compiles it for validation.
func SchemaFor[T any]() (*Schema, error) {
	r := jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, Anonymous: true}
	s := r.ReflectFromType(reflect.TypeFor[T]())
	s.Version = ""
	doc, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("llm: schema for %s: %w", reflect.TypeFor[T](), err)
	}
	return CompileSchema(doc)
}

// CompileSchema compiles a JSON Schema document.
func CompileSchema(doc json.RawMessage) (*Schema, error) {
	parsed, err := validator.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("llm: schema is not JSON: %w", err)
	}
	c := validator.NewCompiler()
	if err := c.AddResource("schema.json", parsed); err != nil {
		return nil, fmt.Errorf("llm: schema: %w", err)
	}
	v, err := c.Compile("schema.json")
	if err != nil {
		return nil, fmt.Errorf("llm: schema does not compile: %w", err)
	}
	return &Schema{JSON: doc, validator: v}, nil
}

// Check parses text as JSON (a surrounding code fence or prose is tolerated)
// and validates it, returning the JSON and every problem found.
func (s *Schema) Check(text string) (json.RawMessage, []string) {
	raw := extractJSON(text)
	if raw == "" {
		return nil, []string{"the answer contains no JSON value"}
	}
	value, err := validator.UnmarshalJSON(strings.NewReader(raw))
	if err != nil {
		return nil, []string{"the answer is not valid JSON: " + err.Error()}
	}
	if err := s.validator.Validate(value); err != nil {
		var ve *validator.ValidationError
		if errors.As(err, &ve) {
			return nil, flattenValidation(ve)
		}
		return nil, []string{err.Error()}
	}
	return json.RawMessage(raw), nil
}

// flattenValidation lists the leaf causes as "at /path: message".
func flattenValidation(ve *validator.ValidationError) []string {
	if len(ve.Causes) == 0 {
		loc := "/" + strings.Join(ve.InstanceLocation, "/")
		return []string{fmt.Sprintf("at %s: %s", loc, ve.ErrorKind.LocalizedString(englishPrinter))}
	}
	var out []string
	for _, c := range ve.Causes {
		out = append(out, flattenValidation(c)...)
	}
	return out
}

// extractJSON returns the JSON value in a model's answer: the whole text
// when it is JSON, else the body of a ``` fence, else the span from the
// first '{' or '[' to the last matching closer.
func extractJSON(text string) string {
	t := strings.TrimSpace(text)
	if json.Valid([]byte(t)) {
		return t
	}
	if i := strings.Index(t, "```"); i >= 0 {
		body := t[i+3:]
		if nl := strings.IndexByte(body, '\n'); nl >= 0 {
			body = body[nl+1:]
		}
		if j := strings.Index(body, "```"); j >= 0 {
			return strings.TrimSpace(body[:j])
		}
	}
	open := strings.IndexAny(t, "{[")
	if open < 0 {
		return ""
	}
	closer := "}"
	if t[open] == '[' {
		closer = "]"
	}
	end := strings.LastIndex(t, closer)
	if end < open {
		return t[open:]
	}
	return t[open : end+1]
}

// AskJSON asks for an answer that is JSON matching T's schema. The schema is
// added to the system prompt; a non-conforming answer is sent back with the
// validation errors quoted, up to opts.Repairs times. It returns the value
// and every call made, also on failure, so the caller can meter them.
func AskJSON[T any](ctx context.Context, c *Client, req *Request, opts JSONOptions) (T, []*Call, error) {
	var zero T
	schema, err := SchemaFor[T]()
	if err != nil {
		return zero, nil, err
	}
	raw, calls, err := AskSchema(ctx, c, req, schema, opts)
	if err != nil {
		return zero, calls, err
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return zero, calls, &StructuredOutputError{Raw: string(raw), Errors: []string{err.Error()}, Attempts: len(calls)}
	}
	return v, calls, nil
}

// AskSchema is AskJSON for a schema given as a document.
func AskSchema(ctx context.Context, c *Client, req *Request, schema *Schema, opts JSONOptions) (json.RawMessage, []*Call, error) {
	repairs := opts.Repairs
	switch {
	case repairs == 0:
		repairs = 2
	case repairs < 0:
		repairs = 0
	}
	instruction, repair := opts.Instruction, opts.Repair
	if instruction == nil {
		instruction = DefaultInstruction
	}
	if repair == nil {
		repair = DefaultRepair
	}
	r := req.Clone()
	r.System = append(r.System, SystemBlock{Type: BlockText, Text: instruction(string(schema.JSON))})
	var calls []*Call
	for attempt := 0; ; attempt++ {
		if err := CheckRequest(r, c.Betas()...); err != nil {
			return nil, calls, err
		}
		call, err := c.Send(ctx, r)
		if err != nil {
			return nil, calls, err
		}
		calls = append(calls, call)
		text := call.Response.Text()
		raw, problems := schema.Check(text)
		if problems == nil {
			return raw, calls, nil
		}
		if call.Response.StopReason == StopMaxTokens {
			problems = append(problems, "the answer was cut off at max_tokens; raise max_tokens or ask for less")
		}
		if attempt >= repairs {
			return nil, calls, &StructuredOutputError{Raw: text, Errors: problems, Attempts: len(calls)}
		}
		if strings.TrimSpace(text) == "" {
			text = "(empty answer)"
		}
		r.Messages = append(r.Messages,
			Message{Role: RoleAssistant, Content: []ContentBlock{TextBlock(text)}},
			UserText(repair(problems)))
	}
}
