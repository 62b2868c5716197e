package llm

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// Each block type, as the API writes it. Every block must come back byte
// for byte.
var blockWire = map[string]string{
	"text":                         `{"type":"text","text":"hello"}`,
	"text with citations":          `{"type":"text","text":"cited","citations":[{"type":"web_search_result_location","url":"https://example.com","title":"Ex","cited_text":"x","encrypted_index":"abc"}]}`,
	"text with cache_control":      `{"type":"text","text":"cache me","cache_control":{"type":"ephemeral","ttl":"1h"}}`,
	"image base64":                 `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}`,
	"image url":                    `{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}`,
	"tool_use":                     `{"type":"tool_use","id":"toolu_01","name":"block_read","input":{"name":"purpose","path":"0.12"}}`,
	"tool_use from code execution": `{"type":"tool_use","id":"toolu_02","name":"block_read","input":{"name":"wake"},"caller":{"type":"code_execution_20250825","tool_id":"srvtoolu_05"}}`,
	"tool_result string":           `{"type":"tool_result","tool_use_id":"toolu_01","content":"done"}`,
	"tool_result blocks":           `{"type":"tool_result","tool_use_id":"toolu_01","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}`,
	"tool_result error":            `{"type":"tool_result","tool_use_id":"toolu_01","content":"boom","is_error":true}`,
	"tool_result empty blocks":     `{"type":"tool_result","tool_use_id":"toolu_01","content":[]}`,
	"thinking":                     `{"type":"thinking","thinking":"let me see","signature":"EqQBCgIYAhIM1gbcDa9GJwZA"}`,
	"redacted_thinking":            `{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4a"}`,
	"server_tool_use":              `{"type":"server_tool_use","id":"srvtoolu_01","name":"web_search","input":{"query":"a<b & c>d \u00e9"},"caller":{"type":"direct"}}`,
	"web_search_tool_result":       `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01","content":[{"type":"web_search_result","url":"https://a.b","title":"T","encrypted_content":"Zm9v","page_age":null}]}`,
	"web_fetch_tool_result":        `{"type":"web_fetch_tool_result","tool_use_id":"srvtoolu_02","content":{"type":"web_fetch_result","url":"https://a.b","content":{"type":"document","source":{"type":"text","media_type":"text/plain","data":"hi"}},"retrieved_at":"2026-11-01T00:00:00Z"}}`,
	"code_execution_tool_result":   `{"type":"code_execution_tool_result","tool_use_id":"srvtoolu_03","content":{"type":"code_execution_result","stdout":"4\n","stderr":"","return_code":0,"content":[]}}`,
	"container_upload":             `{"type":"container_upload","file_id":"file_011"}`,
	"tool_use from a toolset":      `{"type":"tool_use","id":"toolu_03","name":"click","input":{"x":1},"toolset_name":"browser"}`,
	"thinking with a future field": `{"type":"thinking","thinking":"hm","signature":"EqQB","summary_of":{"turns":[1,2]}}`,
	"API key order and spacing":    `{"signature":"EqQB", "type":"thinking","thinking":"a<b"}`,
	"future block":                 `{"type":"mcp_tool_use","id":"mcptoolu_1","name":"x","server_name":"s","input":{"n":1.50,"big":12345678901234567890}}`,
}

func TestContentBlocksRoundTripByteForByte(t *testing.T) {
	for name, wire := range blockWire {
		t.Run(name, func(t *testing.T) {
			var b ContentBlock
			if err := json.Unmarshal([]byte(wire), &b); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			out, err := MarshalWire(b)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			// MarshalWire compacts, as every encoding/json output is.
			var want bytes.Buffer
			if err := json.Compact(&want, []byte(wire)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(want.Bytes(), out) {
				t.Fatalf("block not byte-identical:\n in: %s\nout: %s", wire, out)
			}
		})
	}
}

func TestAChangedBlockIsWrittenFromItsFieldsAndKeepsUnknownMembers(t *testing.T) {
	var b ContentBlock
	if err := json.Unmarshal([]byte(`{"type":"tool_use","id":"toolu_1","name":"n","input":{},"toolset_name":"browser","zeta":[1]}`), &b); err != nil {
		t.Fatal(err)
	}
	b.CacheControl = Ephemeral()
	out, err := MarshalWire(b)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"tool_use","id":"toolu_1","name":"n","input":{},"cache_control":{"type":"ephemeral"},"toolset_name":"browser","zeta":[1]}`
	if string(out) != want {
		t.Fatalf("changed block:\n got  %s\n want %s", out, want)
	}

	// A field changed back to what Raw says: the raw bytes again.
	b.CacheControl = nil
	if out, _ := MarshalWire(b); string(out) != `{"type":"tool_use","id":"toolu_1","name":"n","input":{},"toolset_name":"browser","zeta":[1]}` {
		t.Fatalf("unchanged again: %s", out)
	}

	// A block whose type was changed keeps nothing of its old members.
	b.Type, b.Text = BlockText, "now text"
	if out, _ := MarshalWire(b); string(out) != `{"type":"text","text":"now text"}` {
		t.Fatalf("retyped block: %s", out)
	}
}

func TestAChangeInsideAToolResultIsSeen(t *testing.T) {
	var b ContentBlock
	if err := json.Unmarshal([]byte(blockWire["tool_result blocks"]), &b); err != nil {
		t.Fatal(err)
	}
	b.Content.Blocks = []ContentBlock{TextBlock("replaced")}
	out, err := MarshalWire(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"tool_result","tool_use_id":"toolu_01","content":[{"type":"text","text":"replaced"}]}`; string(out) != want {
		t.Fatalf("got %s, want %s", out, want)
	}
}

func TestAKnownBlockWithBrokenRawFailsToMarshal(t *testing.T) {
	_, err := json.Marshal(ContentBlock{Type: BlockText, Text: "x", Raw: json.RawMessage(`{"type":`)})
	if err == nil || !strings.Contains(err.Error(), "raw JSON") {
		t.Fatalf("want an error about the raw JSON, got %v", err)
	}
}

func TestMessageWithRawBlockRoundTripsByteForByte(t *testing.T) {
	raw := blockWire["server_tool_use"]
	in := `{"role":"assistant","content":[` + raw + `,{"type":"text","text":"ok"}]}`
	var m Message
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	out, _ := MarshalWire(m)
	if !strings.Contains(string(out), raw) {
		t.Fatalf("raw block changed inside a message: %s", out)
	}
}

func TestStringFormsAreAccepted(t *testing.T) {
	var r Request
	in := `{"model":"m","max_tokens":10,"system":"be brief","messages":[{"role":"user","content":"hi"}]}`
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.System) != 1 || r.System[0].Text != "be brief" || r.System[0].Type != "text" {
		t.Fatalf("system string not read as one text block: %+v", r.System)
	}
	if got := r.Messages[0].Text(); got != "hi" {
		t.Fatalf("string content not read as text: %q", got)
	}
}

func TestRequestRoundTrip(t *testing.T) {
	in := `{"model":"claude-sonnet-4-5","max_tokens":2048,
	"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],
	"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],
	"tools":[{"name":"get_datetime","description":"now","input_schema":{"type":"object","properties":{}},"allowed_callers":["code_execution_20250825"]},
	         {"type":"web_search_20260209","name":"web_search","max_uses":5,"allowed_domains":["example.com"]}],
	"tool_choice":{"type":"auto","disable_parallel_tool_use":true},
	"thinking":{"type":"enabled","budget_tokens":1024},
	"temperature":1,"stop_sequences":["END"],"metadata":{"user_id":"u1"},"container":"cntr_1"}`
	var r Request
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	if !r.Tools[1].IsServer() || r.Tools[0].IsServer() {
		t.Fatalf("server tool detection wrong: %+v", r.Tools)
	}
	out, _ := json.Marshal(&r)
	if !jsonEqual(t, in, string(out)) {
		t.Fatalf("request changed on round trip:\n in: %s\nout: %s", in, out)
	}
}

func TestCloneIsIndependent(t *testing.T) {
	temp := 0.5
	r := &Request{Model: "m", MaxTokens: 5, Messages: []Message{UserText("a")}, Temperature: &temp, Thinking: &Thinking{Type: "enabled", BudgetTokens: 2000}}
	c := r.Clone()
	c.Messages = append(c.Messages, UserText("b"))
	c.Messages[0] = UserText("changed")
	*c.Temperature = 1
	c.Thinking.BudgetTokens = 9
	if len(r.Messages) != 1 || r.Messages[0].Text() != "a" || *r.Temperature != 0.5 || r.Thinking.BudgetTokens != 2000 {
		t.Fatalf("editing the clone changed the original: %+v", r)
	}
}

func TestUnknownBlockWithoutRawCannotBeSent(t *testing.T) {
	_, err := json.Marshal(ContentBlock{Type: "server_tool_use"})
	if err == nil || !strings.Contains(err.Error(), "server_tool_use") {
		t.Fatalf("want an error naming the type, got %v", err)
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("bad JSON %s: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("bad JSON %s: %v", b, err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// TestEditsOfBlocksTheRuntimeDoesNotInterpret pins that no edit of a
// decoded block is lost to its stale raw bytes: cache_control set on (or
// removed from) a block kept only as raw JSON (a document, a server tool
// result) is sent, with the block's other members; and a block whose type
// was changed is refused rather than sent as its old self.
func TestEditsOfBlocksTheRuntimeDoesNotInterpret(t *testing.T) {
	var blocks []ContentBlock
	in := `[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"x"},"title":"T"},` +
		`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[],"cache_control":{"type":"ephemeral"}}]`
	if err := json.Unmarshal([]byte(in), &blocks); err != nil {
		t.Fatal(err)
	}
	if out, _ := MarshalWire(blocks); string(out) != in {
		t.Fatalf("unchanged blocks came out as %s", out)
	}
	blocks[0].CacheControl = Ephemeral()
	blocks[1].CacheControl = nil
	out, err := MarshalWire(blocks)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"document","cache_control":{"type":"ephemeral"},"source":{"type":"text","media_type":"text/plain","data":"x"},"title":"T"},` +
		`{"type":"web_search_tool_result","content":[],"tool_use_id":"srvtoolu_1"}]`
	if string(out) != want {
		t.Fatalf("edited blocks came out as\n%s\nwant\n%s", out, want)
	}

	var text ContentBlock
	json.Unmarshal([]byte(`{"type":"text","text":"a"}`), &text)
	text.Type = "server_tool_use"
	if out, err := json.Marshal(text); err == nil {
		t.Fatalf("a text block retyped as server_tool_use was sent as %s", out)
	}
}

// TestAnEditedImageKeepsItsFileSource pins that an image given by a Files
// API id keeps it when the block is changed (cache_control added): its
// source used to come back as {"type":"file"} alone.
func TestAnEditedImageKeepsItsFileSource(t *testing.T) {
	var b ContentBlock
	if err := json.Unmarshal([]byte(`{"type":"image","source":{"type":"file","file_id":"file_011"}}`), &b); err != nil {
		t.Fatal(err)
	}
	b.CacheControl = Ephemeral()
	out, err := MarshalWire(b)
	if want := `{"type":"image","source":{"type":"file","file_id":"file_011"},"cache_control":{"type":"ephemeral"}}`; err != nil || string(out) != want {
		t.Fatalf("got %s, %v; want %s", out, err, want)
	}
}
