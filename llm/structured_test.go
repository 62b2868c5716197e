package llm

import (
	"context"
	"errors"
	"strings"
	"testing"
)

type estimate struct {
	Task       string  `json:"task"`
	CostUSD    float64 `json:"cost_usd" jsonschema:"minimum=0"`
	Confidence float64 `json:"confidence" jsonschema:"minimum=0,maximum=1"`
	Notes      string  `json:"notes,omitempty"`
}

func TestAskJSONAcceptsAConformingAnswer(t *testing.T) {
	p := &fakeProvider{steps: []func(*Request) (*Response, error){
		answer("Here it is:\n```json\n{\"task\":\"build\",\"cost_usd\":12.5,\"confidence\":0.8}\n```"),
	}}
	got, calls, err := AskJSON[estimate](context.Background(), &Client{Provider: p}, simpleRequest("m"), JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Task != "build" || got.CostUSD != 12.5 || got.Confidence != 0.8 || len(calls) != 1 {
		t.Fatalf("got %+v after %d calls", got, len(calls))
	}
	sys := p.reqs[0].System[len(p.reqs[0].System)-1].Text
	if !strings.Contains(sys, `"required":["task","cost_usd","confidence"]`) || !strings.Contains(sys, `"additionalProperties":false`) {
		t.Fatalf("schema not shown to the model as expected: %s", sys)
	}
}

func TestAskJSONRepairsWithTheValidationErrorsQuoted(t *testing.T) {
	p := &fakeProvider{steps: []func(*Request) (*Response, error){
		answer(`{"task":"build","cost_usd":-3,"confidence":0.8}`),
		answer(`{"task":"build","cost_usd":3,"confidence":0.8}`),
	}}
	got, calls, err := AskJSON[estimate](context.Background(), &Client{Provider: p}, simpleRequest("m"), JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.CostUSD != 3 || len(calls) != 2 {
		t.Fatalf("got %+v after %d calls", got, len(calls))
	}
	repair := p.reqs[1].Messages
	if len(repair) != 3 || repair[1].Text() != `{"task":"build","cost_usd":-3,"confidence":0.8}` {
		t.Fatalf("the bad answer must be shown back as the assistant turn: %+v", repair)
	}
	if q := repair[2].Text(); !strings.Contains(q, "at /cost_usd: minimum: got -3, want 0") {
		t.Fatalf("repair request does not quote the validation error: %s", q)
	}
}

func TestAskJSONFailsWithRawTextAndErrors(t *testing.T) {
	p := &fakeProvider{steps: []func(*Request) (*Response, error){
		answer(`not json at all`),
		answer(`{"task":"x"}`),
		answer(`{"task":"x","cost_usd":1,"confidence":2,"extra":true}`),
	}}
	_, calls, err := AskJSON[estimate](context.Background(), &Client{Provider: p}, simpleRequest("m"), JSONOptions{Repairs: 2})
	var se *StructuredOutputError
	if !errors.As(err, &se) {
		t.Fatalf("want a StructuredOutputError, got %v", err)
	}
	if len(calls) != 3 || se.Attempts != 3 || se.Raw != `{"task":"x","cost_usd":1,"confidence":2,"extra":true}` {
		t.Fatalf("calls %d attempts %d raw %q", len(calls), se.Attempts, se.Raw)
	}
	joined := strings.Join(se.Errors, "\n")
	if !strings.Contains(joined, "maximum") || !strings.Contains(joined, "extra") {
		t.Fatalf("errors do not name both problems: %s", joined)
	}
	if !strings.Contains(p.reqs[1].Messages[2].Text(), "contains no JSON value") {
		t.Fatalf("first repair should say there was no JSON: %s", p.reqs[1].Messages[2].Text())
	}
}

func TestAskJSONWithoutRepairs(t *testing.T) {
	p := &fakeProvider{steps: []func(*Request) (*Response, error){answer(`{}`), answer("never")}}
	_, calls, err := AskJSON[estimate](context.Background(), &Client{Provider: p}, simpleRequest("m"), JSONOptions{Repairs: -1})
	if err == nil || len(calls) != 1 {
		t.Fatalf("want failure after one call, got %v after %d", err, len(calls))
	}
}

func TestExtractJSON(t *testing.T) {
	cases := map[string]string{
		`{"a":1}`:                           `{"a":1}`,
		"  [1,2]\n":                         `[1,2]`,
		"```json\n{\"a\":1}\n```":           `{"a":1}`,
		"```\n{\"a\":1}\n```\nthanks":       `{"a":1}`,
		`Sure! {"a":{"b":2}} Hope it helps`: `{"a":{"b":2}}`,
		`no json here`:                      ``,
	}
	for in, want := range cases {
		if got := extractJSON(in); got != want {
			t.Errorf("extractJSON(%q) = %q, want %q", in, got, want)
		}
	}
}

// The wording solve and hermitcrab send (JSONOptions without Instruction or
// Repair) is pinned byte for byte: a kernel supplying its own wording must
// not change theirs.
func TestAskSchemaDefaultWordingIsPinned(t *testing.T) {
	schema, err := CompileSchema([]byte(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`))
	if err != nil {
		t.Fatal(err)
	}
	p := &fakeProvider{steps: []func(*Request) (*Response, error){answer(`{"n":"x"}`), answer(`{"n":1}`)}}
	if _, _, err := AskSchema(context.Background(), &Client{Provider: p}, simpleRequest("m"), schema, JSONOptions{}); err != nil {
		t.Fatal(err)
	}
	sys := p.reqs[0].System
	wantSys := "Answer with one JSON value and nothing else, matching this JSON Schema:\n" +
		`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`
	if got := sys[len(sys)-1].Text; got != wantSys {
		t.Fatalf("instruction changed:\n got %q\nwant %q", got, wantSys)
	}
	wantRepair := "Your answer does not match the schema:\n- at /n: got string, want integer\nAnswer again with only the corrected JSON."
	if got := p.reqs[1].Messages[2].Text(); got != wantRepair {
		t.Fatalf("repair changed:\n got %q\nwant %q", got, wantRepair)
	}
}

func TestAskSchemaUsesTheCallersWording(t *testing.T) {
	schema, err := CompileSchema([]byte(`{"type":"integer"}`))
	if err != nil {
		t.Fatal(err)
	}
	p := &fakeProvider{steps: []func(*Request) (*Response, error){answer(`"x"`), answer(`1`)}}
	opts := JSONOptions{
		Instruction: func(s string) string { return "JSON please, per <" + s + ">" },
		Repair:      func(ps []string) string { return "wrong: " + strings.Join(ps, " | ") },
	}
	raw, _, err := AskSchema(context.Background(), &Client{Provider: p}, simpleRequest("m"), schema, opts)
	if err != nil || string(raw) != "1" {
		t.Fatalf("raw %s err %v", raw, err)
	}
	sys := p.reqs[0].System
	if got := sys[len(sys)-1].Text; got != `JSON please, per <{"type":"integer"}>` {
		t.Fatalf("instruction: %q", got)
	}
	if got := p.reqs[1].Messages[2].Text(); got != "wrong: at /: got string, want integer" {
		t.Fatalf("repair: %q", got)
	}
}
