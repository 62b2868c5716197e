package mcp

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestSchemasAreCheckedAsTheAPIChecksThem(t *testing.T) {
	for _, ok := range []string{
		`{"type":"object"}`,
		`{"type":"object","properties":{"path":{"type":"string"},"a.b-c_d":{"type":"integer"}},"required":["path"]}`,
		// What zod-to-json-schema writes: draft-07's $schema and definitions.
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"x":{"$ref":"#/definitions/x"}},"definitions":{"x":{"type":"string"}},"additionalProperties":false}`,
		// oneOf below the top level is fine.
		`{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"number"}]}}}`,
	} {
		if err := CheckSchema(json.RawMessage(ok)); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	for schema, words := range map[string]string{
		``:                  "input_schema: field required",
		`[1,2]`:             "input_schema: Input should be a valid dictionary",
		`{"type":"string"}`: `input_schema.type: Input should be 'object', got "string"`,
		`{"properties":{}}`: "input_schema.type: Input should be 'object', got null",
		`{"type":"object","anyOf":[{"required":["a"]}]}`:                   "does not support oneOf, allOf, or anyOf at the top level (it has anyOf)",
		`{"type":"object","allOf":[]}`:                                     "(it has allOf)",
		`{"type":"object","properties":{"rule_name[]":{"type":"string"}}}`: `property name "rule_name[]" should match`,
		`{"type":"object","properties":{"":{"type":"string"}}}`:            `property name "" should match`,
		`{"type":"object","required":"path"}`:                              "must match JSON Schema draft 2020-12: at /required:",
		`{"type":"object","properties":{"a":{"type":"strin"}}}`:            "at /properties/a/type:",
		`{"type":"object","properties":{"a":{"minLength":-1}}}`:            "at /properties/a/minLength:",
		`{"type":"object","properties":5}`:                                 "at /properties:",
		`{"type":"object","properties":{"a\u001b[2J":{"type":"string"}}}`:  `property name "a\\x1b[2J"`,
	} {
		err := CheckSchema(json.RawMessage(schema))
		if err == nil || !strings.Contains(err.Error(), words) {
			t.Errorf("%s: want an error about %q, got %v", schema, words, err)
		}
	}
}

func TestOfferNames(t *testing.T) {
	for tool, want := range map[string]string{
		"read":          "fs__read",
		"files.read":    "fs__files_read",
		"a/b c":         "fs__a_b_c",
		"read-file_2":   "fs__read-file_2",
		"lire_été":      "fs__lire__t_",
		"x\x1b":         "fs__x_",
		"__dunder__":    "fs____dunder__",
		"toolWithCase0": "fs__toolWithCase0",
	} {
		if got := offerName("fs", tool); got != want {
			t.Errorf("%q: %q, want %q", tool, got, want)
		}
	}
}

func TestToolsTheAPIWouldRefuseByNameAreLeftOutWithANote(t *testing.T) {
	c := newConn(Server{Name: "fs", Command: "unused"}, Options{})
	object := map[string]any{"type": "object"}
	c.tools = []*mcp.Tool{
		{Name: "a.b", InputSchema: object},
		{Name: "a_b", InputSchema: object},
		{Name: strings.Repeat("t", 61), InputSchema: object},
		{Name: strings.Repeat("t", 60), InputSchema: object},
		{Name: "", InputSchema: object},
		{Name: "noschema"},
		{Name: "long", Description: strings.Repeat("d", maxDescription+10), InputSchema: object},
		{Name: "titled", Title: "Only a title", InputSchema: object},
	}
	var o Offer
	c.offer(&o, map[string]bool{})
	if got := names(o); !slices.Equal(got, []string{"fs__a_b", "fs__" + strings.Repeat("t", 60), "fs__long", "fs__titled"}) {
		t.Errorf("offered %v", got)
	}
	wantNote(t, o.Notes, `tool "a_b" left out: another tool is offered as fs__a_b already`)
	wantNote(t, o.Notes, `its name as offered, fs__tttt`)
	wantNote(t, o.Notes, "has 65 characters; the API takes at most 64")
	wantNote(t, o.Notes, `tool "" left out: it has no name`)
	wantNote(t, o.Notes, `tool "noschema" left out: the API would refuse its schema: input_schema.type: Input should be 'object', got null`)
	wantNote(t, o.Notes, `tool fs__long: description cut from 2058 to 2048 characters`)
	for _, h := range o.Handlers {
		switch h.Tool.Name {
		case "fs__long":
			if d := h.Tool.Description; len(d) != maxDescription+len("…") || !strings.HasSuffix(d, "…") {
				t.Errorf("long description: %d bytes", len(d))
			}
		case "fs__titled":
			if h.Tool.Description != "Only a title" {
				t.Errorf("a tool with only a title is described as %q", h.Tool.Description)
			}
		}
	}
}
