package llm

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"math"
	"strings"
	"testing"
)

func TestCheckRequestCatchesEachRule(t *testing.T) {
	one, half := 1.0, 0.5
	schema := json.RawMessage(`{"type":"object"}`)
	use := toolUse("toolu_1", "echo", `{}`)
	answered := ToolResultBlock("toolu_1", ToolResultContent{Text: "ok"}, false)
	base := func() *Request {
		return &Request{Model: "m", MaxTokens: 100, Messages: []Message{UserText("hi")}}
	}
	cases := []struct {
		name string
		edit func(*Request)
		want string // "" means valid
	}{
		{"valid", func(*Request) {}, ""},
		{"an MCP server with its toolset", func(r *Request) {
			r.MCPServers = []MCPServer{{Type: "url", URL: "https://example.com/mcp", Name: "docs", AuthorizationToken: "t"}}
			r.Tools = []Tool{MCPToolset("docs")}
		}, ""},
		{"an MCP server over http", func(r *Request) {
			r.MCPServers = []MCPServer{{Type: "url", URL: "http://example.com/mcp", Name: "docs"}}
			r.Tools = []Tool{MCPToolset("docs")}
		}, "mcp_servers.0.url: must start with https://"},
		{"an MCP server without a toolset", func(r *Request) {
			r.MCPServers = []MCPServer{{Type: "url", URL: "https://example.com/mcp", Name: "docs"}}
		}, "referenced by exactly one mcp_toolset"},
		{"two MCP servers of one name", func(r *Request) {
			r.MCPServers = []MCPServer{{Type: "url", URL: "https://a.example/mcp", Name: "docs"}, {Type: "url", URL: "https://b.example/mcp", Name: "docs"}}
			r.Tools = []Tool{MCPToolset("docs")}
		}, "duplicate name"},
		{"a toolset naming no server", func(r *Request) { r.Tools = []Tool{MCPToolset("ghost")} }, "not among mcp_servers"},
		{"a toolset naming no one", func(r *Request) { r.Tools = []Tool{{Type: ToolMCPToolset}} }, "mcp_server_name: field required"},
		{"an image in a tool result", func(r *Request) {
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{use}},
				Message{Role: RoleUser, Content: []ContentBlock{ToolResultBlock("toolu_1", ToolResultContent{Blocks: []ContentBlock{TextBlock("a pixel:"), pngBlock("image/png", pixel)}}, false)}})
		}, ""},
		{"an image by URL", func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, ContentBlock{Type: BlockImage, Source: &ImageSource{Type: "url", URL: "https://example.com/a.png"}})
		}, ""},
		{"an image of a type the API does not take", func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, pngBlock("image/tiff", pixel))
		}, "messages.0.content.1.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif', 'image/webp', got \"image/tiff\""},
		{"an image that is not what its media type says", func(r *Request) {
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{use}},
				Message{Role: RoleUser, Content: []ContentBlock{ToolResultBlock("toolu_1", ToolResultContent{Blocks: []ContentBlock{pngBlock("image/jpeg", pixel)}}, false)}})
		}, "messages.2.content.0.content.0.source.base64.data: Image does not match the provided media type image/jpeg"},
		{"an image over 5 MB", func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, pngBlock("image/png", pixel+strings.Repeat("A", MaxImageBase64)))
		}, "image exceeds 5 MB maximum"},
		{"an image in base64 with line breaks", func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, pngBlock("image/png", pixel[:10]+"\r\n"+pixel[10:]))
		}, ""},
		{"an image that is not base64", func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, pngBlock("image/png", "not base64!"))
		}, "not valid base64"},
		// In a request of more than 20 images each may have 2,000 pixels
		// a side at most, wherever the images are.
		{"twenty images, one 2001 pixels wide", func(r *Request) { r.Messages[0].Content = append(r.Messages[0].Content, images(20, wide)...) }, ""},
		{"twenty-one images, one 2001 pixels wide", func(r *Request) {
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{use}},
				Message{Role: RoleUser, Content: []ContentBlock{ToolResultBlock("toolu_1", ToolResultContent{Blocks: images(11, wide[:20]+"\n"+wide[20:])}, false)}},
				UserText("and more"))
			r.Messages[0].Content = append(r.Messages[0].Content, images(10, "")...)
		}, "messages.2.content.0.content.10.source.base64.data: At least one of the image dimensions exceed max allowed size for many-image requests: 2000 pixels"},
		{"an image 8001 pixels tall", func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, pngBlock("image/png", pngBase64(1, MaxImageSide+1)))
		}, "exceed max allowed size: 8000 pixels"},
		{"twenty-one images of 2000 pixels", func(r *Request) { r.Messages[0].Content = append(r.Messages[0].Content, images(21, square)...) }, ""},
		{"no model", func(r *Request) { r.Model = "" }, "model: field required"},
		{"no max_tokens", func(r *Request) { r.MaxTokens = 0 }, "max_tokens: must be at least 1"},
		{"no messages", func(r *Request) { r.Messages = nil }, "at least one message"},
		{"assistant first", func(r *Request) { r.Messages[0].Role = RoleAssistant }, "first message must use the user role"},
		// The API combines consecutive turns of one role into one turn.
		{"two user turns in a row", func(r *Request) { r.Messages = append(r.Messages, UserText("again")) }, ""},
		{"tool results split over two user messages", func(r *Request) {
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{use, toolUse("toolu_2", "echo", `{}`)}},
				Message{Role: RoleUser, Content: []ContentBlock{answered}},
				Message{Role: RoleUser, Content: []ContentBlock{ToolResultBlock("toolu_2", ToolResultContent{Text: "ok"}, false), TextBlock("and?")}})
		}, ""},
		{"a tool call answered after a second assistant message", func(r *Request) {
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{use}},
				Message{Role: RoleAssistant, Content: []ContentBlock{TextBlock("calling")}},
				Message{Role: RoleUser, Content: []ContentBlock{answered}})
		}, ""},
		{"text before a result in the combined user turn", func(r *Request) {
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{use}},
				UserText("first"), Message{Role: RoleUser, Content: []ContentBlock{answered}})
		}, "messages.3.content.0: tool_result blocks must come before any other content"},
		{"a result answering a call two turns back", func(r *Request) {
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{use}},
				Message{Role: RoleUser, Content: []ContentBlock{answered}},
				Message{Role: RoleAssistant, Content: []ContentBlock{TextBlock("done")}},
				Message{Role: RoleUser, Content: []ContentBlock{answered}})
		}, "messages.4.content.0: unexpected `tool_use_id`"},
		{"empty content", func(r *Request) { r.Messages[0].Content = nil }, "non-empty content"},
		{"empty final assistant message", func(r *Request) { r.Messages = append(r.Messages, Message{Role: RoleAssistant}) }, ""},
		{"empty assistant message before the end", func(r *Request) {
			r.Messages = append(r.Messages, Message{Role: RoleAssistant}, UserText("again"))
		}, "messages.1: all messages must have non-empty content"},
		{"empty text", func(r *Request) { r.Messages[0] = UserText("") }, "text content blocks must be non-empty"},
		{"empty system text", func(r *Request) { r.System = []SystemBlock{{Type: "text"}} }, "system.0: text content blocks must be non-empty"},
		{"unanswered tool_use", func(r *Request) {
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{use}}, UserText("next"))
		}, "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"},
		{"tool_use at the end", func(r *Request) {
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{use}})
		}, "without `tool_result`"},
		{"answered tool_use", func(r *Request) {
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{use}},
				Message{Role: RoleUser, Content: []ContentBlock{answered, TextBlock("more")}})
		}, ""},
		{"result for no tool_use", func(r *Request) {
			r.Messages[0] = Message{Role: RoleUser, Content: []ContentBlock{answered}}
		}, "unexpected `tool_use_id` found in `tool_result` blocks: toolu_1"},
		{"result after text", func(r *Request) {
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{use}},
				Message{Role: RoleUser, Content: []ContentBlock{TextBlock("first"), answered}})
		}, "tool_result blocks must come before any other content"},
		{"result twice", func(r *Request) {
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{use}},
				Message{Role: RoleUser, Content: []ContentBlock{answered, answered}})
		}, "answered twice"},
		{"tool_use from user", func(r *Request) { r.Messages[0].Content = []ContentBlock{use} }, "tool_use blocks may only appear in assistant messages"},
		{"thinking from user", func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, ContentBlock{Type: BlockThinking, Thinking: "t", Signature: "s"})
		}, "messages.0.content.1: thinking blocks may only appear in assistant messages"},
		{"redacted thinking from user", func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, ContentBlock{Type: BlockRedactedThinking, Data: "cmVkYWN0ZWQ="})
		}, "messages.0.content.1: redacted_thinking blocks may only appear in assistant messages"},
		{"duplicate tool names", func(r *Request) {
			r.Tools = []Tool{{Name: "echo", InputSchema: schema}, {Name: "echo", InputSchema: schema}}
		}, `duplicate tool name "echo"`},
		{"bad tool name", func(r *Request) { r.Tools = []Tool{{Name: "block read", InputSchema: schema}} }, "must match"},
		{"client tool whose schema is not of an object", func(r *Request) {
			r.Tools = []Tool{{Name: "x", InputSchema: json.RawMessage(`{"type":"string"}`)}}
		}, `tools.0.input_schema.type: Input should be 'object', got "string"`},
		{"client tool whose schema is not an object", func(r *Request) { r.Tools = []Tool{{Name: "x", InputSchema: json.RawMessage(`[]`)}} }, "tools.0.input_schema: Input should be a valid dictionary"},
		{"server tool without schema", func(r *Request) { r.Tools = []Tool{{Type: "web_search_20260209", Name: "web_search"}} }, ""},
		{"tool_choice names a missing tool", func(r *Request) { r.ToolChoice = &ToolChoice{Type: "tool", Name: "nope"} }, `tool "nope" is not among`},
		{"thinking budget equal to max_tokens", func(r *Request) {
			r.MaxTokens = 2048
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 2048}
		}, "max_tokens: must be greater than thinking.budget_tokens"},
		{"thinking budget too small", func(r *Request) { r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 10} }, "at least 1024"},
		{"temperature with thinking", func(r *Request) {
			r.MaxTokens = 4000
			r.Thinking = &Thinking{Type: "adaptive"}
			r.Temperature = &half
		}, "temperature: may only be set to 1 when thinking is enabled"},
		{"temperature with manual thinking", func(r *Request) {
			r.MaxTokens = 4000
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 2000}
			r.Temperature = new(0.0)
		}, "temperature: may only be set to 1 when thinking is enabled, got 0"},
		{"temperature with thinking disabled", func(r *Request) {
			r.Thinking = &Thinking{Type: "disabled"}
			r.Temperature = &half
		}, ""},
		{"temperature 1 with thinking", func(r *Request) {
			r.MaxTokens = 4000
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 2000}
			r.Temperature = &one
		}, ""},
		{"forced tool with manual thinking", func(r *Request) {
			r.MaxTokens = 4000
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 2000}
			r.ToolChoice = &ToolChoice{Type: "any"}
		}, "thinking may not be enabled when tool_choice forces tool use"},
		{"forced named tool with manual thinking", func(r *Request) {
			r.MaxTokens = 4000
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 2000}
			r.Tools = []Tool{{Name: "echo", InputSchema: schema}}
			r.ToolChoice = &ToolChoice{Type: "tool", Name: "echo"}
		}, "thinking may not be enabled when tool_choice forces tool use"},
		{"forced tool with adaptive thinking", func(r *Request) {
			r.Thinking = &Thinking{Type: "adaptive"}
			r.ToolChoice = &ToolChoice{Type: "any"}
		}, ""},
		{"adaptive thinking, a tool turn answered without thinking", func(r *Request) {
			r.Thinking = &Thinking{Type: "adaptive"}
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{use}},
				Message{Role: RoleUser, Content: []ContentBlock{answered}})
		}, ""},
		{"adaptive thinking with display omitted", func(r *Request) { r.Thinking = &Thinking{Type: "adaptive", Display: "omitted"} }, ""},
		{"between_tools thinking", func(r *Request) { r.Thinking = &Thinking{Type: "between_tools"} }, ""},
		{"unknown thinking type", func(r *Request) { r.Thinking = &Thinking{Type: "always"} }, `thinking.type: must be enabled, adaptive, disabled or between_tools, got "always"`},
		{"manual thinking, the continued turn split over two messages", func(r *Request) {
			r.MaxTokens = 4000
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 2000}
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{{Type: BlockThinking, Thinking: "t", Signature: "s"}}},
				Message{Role: RoleAssistant, Content: []ContentBlock{use}},
				Message{Role: RoleUser, Content: []ContentBlock{answered}})
		}, ""},
		{"manual thinking, a tool loop started with redacted thinking", func(r *Request) {
			r.MaxTokens = 4000
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 2000}
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{{Type: BlockRedactedThinking, Data: "cmVkYWN0ZWQ="}, use}},
				Message{Role: RoleUser, Content: []ContentBlock{answered}})
		}, ""},
		{"manual thinking, the combined turn starts without it", func(r *Request) {
			r.MaxTokens = 4000
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 2000}
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{TextBlock("hm")}},
				Message{Role: RoleAssistant, Content: []ContentBlock{{Type: BlockThinking, Thinking: "t", Signature: "s"}, use}},
				Message{Role: RoleUser, Content: []ContentBlock{answered}}, UserText("go on"))
		}, "messages.1.content.0: expected `thinking` or `redacted_thinking`, but found `text`"},
		{"manual thinking, a second tool round without thinking", func(r *Request) {
			// Without interleaved thinking the model thinks once, at the
			// start of its turn; a tool loop is one turn, so the answers
			// after tool results carry no thinking, and the API takes them.
			r.MaxTokens = 4000
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 2000}
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{{Type: BlockThinking, Thinking: "t", Signature: "s"}, use}},
				Message{Role: RoleUser, Content: []ContentBlock{answered}},
				Message{Role: RoleAssistant, Content: []ContentBlock{toolUse("toolu_2", "echo", `{}`)}},
				Message{Role: RoleUser, Content: []ContentBlock{ToolResultBlock("toolu_2", ToolResultContent{Text: "ok"}, false)}})
		}, ""},
		{"manual thinking dropped from the start of a tool loop", func(r *Request) {
			r.MaxTokens = 4000
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 2000}
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{use}},
				Message{Role: RoleUser, Content: []ContentBlock{answered}},
				Message{Role: RoleAssistant, Content: []ContentBlock{{Type: BlockThinking, Thinking: "t", Signature: "s"}, toolUse("toolu_2", "echo", `{}`)}},
				Message{Role: RoleUser, Content: []ContentBlock{ToolResultBlock("toolu_2", ToolResultContent{Text: "ok"}, false)}})
		}, "messages.1.content.0: expected `thinking` or `redacted_thinking`, but found `tool_use`"},
		{"manual thinking, a new question starts a new turn", func(r *Request) {
			r.MaxTokens = 4000
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 2000}
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{TextBlock("hello")}},
				UserText("now use the tool"),
				Message{Role: RoleAssistant, Content: []ContentBlock{{Type: BlockThinking, Thinking: "t", Signature: "s"}, use}},
				Message{Role: RoleUser, Content: []ContentBlock{answered}})
		}, ""},
		{"thinking dropped during tool use", func(r *Request) {
			r.MaxTokens = 4000
			r.Thinking = &Thinking{Type: "enabled", BudgetTokens: 2000}
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: []ContentBlock{use}},
				Message{Role: RoleUser, Content: []ContentBlock{answered}})
		}, "expected `thinking` or `redacted_thinking`, but found `tool_use`"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := base()
			c.edit(r)
			err := CheckRequest(r)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("want an error containing %q, got %v", c.want, err)
			}
		})
	}
}

// images are n PNG blocks: pixels, and last the PNG last in base64
// (none when "").
func images(n int, last string) []ContentBlock {
	var b []ContentBlock
	for range n - 1 {
		b = append(b, pngBlock("image/png", pixel))
	}
	if last == "" {
		last = pixel
	}
	return append(b, pngBlock("image/png", last))
}

// pngBase64 is a PNG of w by h pixels, in base64.
func pngBase64(w, h int) string {
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// wide is one pixel over the side a request of many images may have;
// square is at it.
var wide, square = pngBase64(MaxImageSideMany+1, 1), pngBase64(MaxImageSideMany, MaxImageSideMany)

// pixel is a PNG of one pixel, in base64.
const pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAADklEQVR4nGJiAAQAAP//AAYAA/rQWa4AAAAASUVORK5CYII="

func pngBlock(mediaType, data string) ContentBlock {
	return ContentBlock{Type: BlockImage, Source: &ImageSource{Type: "base64", MediaType: mediaType, Data: data}}
}

func TestCheckRequestListsEveryViolation(t *testing.T) {
	err := CheckRequest(&Request{})
	inv, ok := err.(*InvalidRequestError)
	if !ok || len(inv.Violations) != 3 {
		t.Fatalf("want model, max_tokens and messages violations, got %v", err)
	}
}

// A client tool without a schema goes out with the empty object schema,
// which the API takes, so the check must not refuse it (it did).
func TestCheckRequestTakesAClientToolWithoutSchema(t *testing.T) {
	req := &Request{Model: "m", MaxTokens: 10, Messages: []Message{{Role: RoleUser, Content: []ContentBlock{{Type: BlockText, Text: "hi"}}}},
		Tools: []Tool{{Name: "now"}}}
	if err := CheckRequest(req); err != nil {
		t.Fatalf("a client tool without input_schema: %v", err)
	}
	data, err := json.Marshal(req.Tools[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"input_schema":{"type":"object","properties":{}}`) {
		t.Errorf("the tool is not sent with the empty object schema: %s", data)
	}
}

func TestInterleavedThinkingBetaLetsTheBudgetExceedMaxTokens(t *testing.T) {
	req := func() *Request {
		return &Request{Model: "m", MaxTokens: 2000, Thinking: &Thinking{Type: "enabled", BudgetTokens: 5000},
			Messages: []Message{UserText("hi")}}
	}
	if err := CheckRequest(req()); err == nil || !strings.Contains(err.Error(), "must be greater than thinking.budget_tokens") {
		t.Errorf("without the beta: %v, want the budget refused", err)
	}
	for _, betas := range [][]string{{BetaInterleavedThinking}, {"a-beta", " other," + BetaInterleavedThinking + " "}} {
		if err := CheckRequest(req(), betas...); err != nil {
			t.Errorf("betas %q: %v", betas, err)
		}
		r := req()
		if notes := Normalize(r, betas...); len(notes) != 0 || r.MaxTokens != 2000 {
			t.Errorf("betas %q: Normalize changed max_tokens to %d: %q", betas, r.MaxTokens, notes)
		}
	}
	if err := CheckRequest(req(), "interleaved-thinking"); err == nil {
		t.Error("a beta that only starts like the interleaved one relaxed the rule")
	}
	r := req()
	if notes := Normalize(r); len(notes) != 1 || r.MaxTokens != 5000+thinkingHeadroom {
		t.Errorf("without the beta Normalize gave max_tokens %d, notes %q", r.MaxTokens, notes)
	}
}

// A temperature out of range with thinking on breaks two rules, and both
// are named; Normalize drops a temperature only while thinking is on.
func TestTemperatureWithThinking(t *testing.T) {
	req := func(thinking string, temp float64) *Request {
		return &Request{Model: "m", MaxTokens: 4000, Thinking: &Thinking{Type: thinking}, Temperature: &temp,
			Messages: []Message{UserText("hi")}}
	}
	err := CheckRequest(req("adaptive", 1.5))
	if inv, ok := err.(*InvalidRequestError); !ok || len(inv.Violations) != 2 ||
		!strings.Contains(err.Error(), "between 0 and 1, got 1.5") || !strings.Contains(err.Error(), "may only be set to 1 when thinking is enabled, got 1.5") {
		t.Errorf("temperature 1.5 with thinking: %v, want both rules named", err)
	}
	for _, c := range []struct {
		thinking string
		temp     float64
		dropped  bool
	}{{"adaptive", 0.5, true}, {"disabled", 0.5, false}, {"adaptive", 1, false}} {
		r := req(c.thinking, c.temp)
		notes := Normalize(r)
		if dropped := r.Temperature == nil; dropped != c.dropped || len(notes) != map[bool]int{true: 1}[c.dropped] {
			t.Errorf("thinking %s, temperature %g: dropped %v (notes %q), want %v", c.thinking, c.temp, dropped, notes, c.dropped)
		}
	}
}

// At most four cache breakpoints, the automatic one counted, as the API
// refuses a fifth; each one ephemeral, with a ttl of 5m or 1h.
func TestCacheBreakpointsAtMostFour(t *testing.T) {
	req := &Request{Model: "m", MaxTokens: 10,
		Tools:    []Tool{{Name: "a", CacheControl: Ephemeral()}},
		System:   []SystemBlock{{Type: BlockText, Text: "s", CacheControl: EphemeralTTL("1h")}},
		Messages: []Message{UserText("one").WithCacheControl(Ephemeral()), {Role: RoleAssistant, Content: []ContentBlock{TextBlock("two")}}}}
	req.CacheControl = Ephemeral()
	if err := CheckRequest(req); err != nil {
		t.Fatalf("four breakpoints: %v", err)
	}
	req.Messages = append(req.Messages, Message{Role: RoleUser, Content: []ContentBlock{
		ToolResultBlock("x", ToolResultContent{Blocks: []ContentBlock{{Type: BlockText, Text: "r", CacheControl: Ephemeral()}}}, false)}})
	err := CheckRequest(req)
	if err == nil || !strings.Contains(err.Error(), "A maximum of 4 blocks with cache_control may be provided. Found 5.") {
		t.Fatalf("five breakpoints (one inside a tool result): %v", err)
	}
	bad := &Request{Model: "m", MaxTokens: 10, Messages: []Message{UserText("x")}, CacheControl: &CacheControl{Type: "persistent", TTL: "2h"}}
	err = CheckRequest(bad)
	if err == nil || !strings.Contains(err.Error(), "cache_control.type: Input should be 'ephemeral'") || !strings.Contains(err.Error(), "cache_control.ttl: Input should be '5m' or '1h'") {
		t.Fatalf("bad cache_control: %v", err)
	}
}

// WithoutCache takes every breakpoint off a copy and leaves the request
// as it was.
func TestWithoutCacheTakesEveryBreakpointOff(t *testing.T) {
	inner := ToolResultBlock("x", ToolResultContent{Blocks: []ContentBlock{{Type: BlockText, Text: "r", CacheControl: Ephemeral()}}}, false)
	req := &Request{Model: "m", MaxTokens: 10, CacheControl: Ephemeral(),
		Tools:    []Tool{{Name: "a", CacheControl: Ephemeral()}},
		System:   []SystemBlock{{Type: BlockText, Text: "s", CacheControl: Ephemeral()}},
		Messages: []Message{{Role: RoleUser, Content: []ContentBlock{inner, TextBlock("q")}}, UserText("more").WithCacheControl(Ephemeral())}}
	before, _ := json.Marshal(req)
	plain := req.WithoutCache()
	after, _ := json.Marshal(req)
	got, _ := json.Marshal(plain)
	if string(before) != string(after) {
		t.Errorf("WithoutCache changed the request:\n%s\n%s", before, after)
	}
	if strings.Contains(string(got), "cache_control") || !strings.Contains(string(before), "cache_control") {
		t.Errorf("left a breakpoint: %s", got)
	}
}

// A thinking budget so large that max_tokens cannot be raised above it
// (the int would overflow to a negative max_tokens) is left as it is, and
// CheckRequest names it (found by FuzzCheckRequest).
func TestNormalizeLeavesABudgetTooLargeToRaiseAbove(t *testing.T) {
	r := &Request{Model: "m", MaxTokens: 100, Thinking: &Thinking{Type: "enabled", BudgetTokens: math.MaxInt}, Messages: []Message{UserText("hi")}}
	if notes := Normalize(r); len(notes) != 0 || r.MaxTokens != 100 {
		t.Fatalf("Normalize gave max_tokens %d, notes %q", r.MaxTokens, notes)
	}
	if err := CheckRequest(r); err == nil || !strings.Contains(err.Error(), "must be greater than thinking.budget_tokens") {
		t.Fatalf("CheckRequest: %v", err)
	}
}
