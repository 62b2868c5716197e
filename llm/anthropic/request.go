package anthropic

import (
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/llmkernels/kernels/llm"
)

// buildParams maps req onto the SDK's params: typed where the typed param
// holds every field of the value, and the value's own wire JSON (what
// llm's MarshalJSON writes) through param.Override where it would not.
func buildParams(req *llm.Request) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{
		Model:         req.Model,
		MaxTokens:     int64(req.MaxTokens),
		StopSequences: req.StopSequences,
	}
	if req.Temperature != nil {
		p.Temperature = param.NewOpt(*req.Temperature)
	}
	if req.Metadata != nil && req.Metadata.UserID != "" {
		p.Metadata = sdk.MetadataParam{UserID: param.NewOpt(req.Metadata.UserID)}
	}
	if req.Container != "" {
		p.Container = sdk.MessageCreateParamsContainerUnion{OfString: param.NewOpt(req.Container)}
	}
	if req.CacheControl != nil {
		cc, ok := cacheControl(req.CacheControl)
		if !ok {
			data, err := wire(req.CacheControl)
			if err != nil {
				return p, fmt.Errorf("llm/anthropic: cache_control: %w", err)
			}
			cc = param.Override[sdk.CacheControlEphemeralParam](data)
		}
		p.CacheControl = cc
	}
	for i, s := range req.System {
		b, err := systemBlock(s)
		if err != nil {
			return p, fmt.Errorf("llm/anthropic: system.%d: %w", i, err)
		}
		p.System = append(p.System, b)
	}
	for i, m := range req.Messages {
		msg := sdk.MessageParam{Role: sdk.MessageParamRole(m.Role)}
		for j, b := range m.Content {
			cb, err := contentBlock(b)
			if err != nil {
				return p, fmt.Errorf("llm/anthropic: messages.%d.content.%d: %w", i, j, err)
			}
			msg.Content = append(msg.Content, cb)
		}
		p.Messages = append(p.Messages, msg)
	}
	for i, t := range req.Tools {
		tp, err := tool(t)
		if err != nil {
			return p, fmt.Errorf("llm/anthropic: tools.%d (%s): %w", i, t.Name, err)
		}
		p.Tools = append(p.Tools, tp)
	}
	if len(req.MCPServers) > 0 {
		// Only the SDK's beta params type mcp_servers; the request goes
		// out as MessageNewParams with it as an extra field, as the API
		// reads it (the mcp_toolset in Tools brings the beta header).
		servers, err := wire(req.MCPServers)
		if err != nil {
			return p, fmt.Errorf("llm/anthropic: mcp_servers: %w", err)
		}
		p.SetExtraFields(map[string]any{"mcp_servers": servers})
	}
	if req.ToolChoice != nil {
		tc, err := toolChoice(*req.ToolChoice)
		if err != nil {
			return p, fmt.Errorf("llm/anthropic: tool_choice: %w", err)
		}
		p.ToolChoice = tc
	}
	if req.Thinking != nil {
		th, err := thinking(*req.Thinking)
		if err != nil {
			return p, fmt.Errorf("llm/anthropic: thinking: %w", err)
		}
		p.Thinking = th
	}
	return p, nil
}

// wire is v's wire JSON, typed json.RawMessage so that param.Override
// sends it as JSON (a plain []byte would be sent as a base64 string).
func wire(v any) (json.RawMessage, error) {
	data, err := json.Marshal(v)
	return json.RawMessage(data), err
}

// cacheControl returns the typed cache_control; ok is false when the typed
// param cannot hold it (a type other than "ephemeral").
func cacheControl(cc *llm.CacheControl) (sdk.CacheControlEphemeralParam, bool) {
	if cc == nil {
		return sdk.CacheControlEphemeralParam{}, true
	}
	if cc.Type != "ephemeral" {
		return sdk.CacheControlEphemeralParam{}, false
	}
	return sdk.CacheControlEphemeralParam{Type: "ephemeral", TTL: sdk.CacheControlEphemeralTTL(cc.TTL)}, true
}

func systemBlock(s llm.SystemBlock) (sdk.TextBlockParam, error) {
	if cc, ok := cacheControl(s.CacheControl); ok && s.Type == llm.BlockText {
		return sdk.TextBlockParam{Text: s.Text, CacheControl: cc}, nil
	}
	data, err := wire(s)
	if err != nil {
		return sdk.TextBlockParam{}, err
	}
	return param.Override[sdk.TextBlockParam](data), nil
}

// contentBlock sends a block as its own wire JSON, what llm's MarshalJSON
// writes: the bytes the API sent for a block that came from it, whatever
// its type. A typed SDK param would re-encode the block and drop what it
// does not hold (a tool_use's caller before this was written, a field added
// to the API later), and a dropped field breaks the round trip the API
// relies on.
func contentBlock(b llm.ContentBlock) (sdk.ContentBlockParamUnion, error) {
	data, err := wire(b)
	if err != nil {
		return sdk.ContentBlockParamUnion{}, fmt.Errorf("%s block: %w", b.Type, err)
	}
	return param.Override[sdk.ContentBlockParamUnion](data), nil
}

// tool maps a client tool onto the typed ToolParam (input_schema and any
// Options as given) and sends a server tool as its own JSON: the SDK has
// one typed param per server tool version, and a version or option it does
// not know would otherwise be refused or dropped.
func tool(t llm.Tool) (sdk.ToolUnionParam, error) {
	cc, ccOK := cacheControl(t.CacheControl)
	if t.IsServer() || !ccOK {
		data, err := wire(t)
		if err != nil {
			return sdk.ToolUnionParam{}, err
		}
		return param.Override[sdk.ToolUnionParam](data), nil
	}
	schema := t.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	if !json.Valid(schema) {
		return sdk.ToolUnionParam{}, fmt.Errorf("input_schema is not valid JSON: %.200s", schema)
	}
	tp := &sdk.ToolParam{
		Name:           t.Name,
		Type:           sdk.ToolType(t.Type),
		InputSchema:    param.Override[sdk.ToolInputSchemaParam](schema),
		CacheControl:   cc,
		AllowedCallers: t.AllowedCallers,
	}
	if t.Description != "" {
		tp.Description = param.NewOpt(t.Description)
	}
	if len(t.Options) > 0 {
		extra := make(map[string]any, len(t.Options))
		for k, v := range t.Options {
			if !json.Valid(v) {
				return sdk.ToolUnionParam{}, fmt.Errorf("option %q is not valid JSON: %.200s", k, v)
			}
			extra[k] = v
		}
		tp.SetExtraFields(extra)
	}
	return sdk.ToolUnionParam{OfTool: tp}, nil
}

func toolChoice(tc llm.ToolChoice) (sdk.ToolChoiceUnionParam, error) {
	var disable param.Opt[bool]
	if tc.DisableParallelToolUse {
		disable = param.NewOpt(true)
	}
	switch {
	case tc.Type == "auto" && tc.Name == "":
		return sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{DisableParallelToolUse: disable}}, nil
	case tc.Type == "any" && tc.Name == "":
		return sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{DisableParallelToolUse: disable}}, nil
	case tc.Type == "tool":
		return sdk.ToolChoiceUnionParam{OfTool: &sdk.ToolChoiceToolParam{Name: tc.Name, DisableParallelToolUse: disable}}, nil
	case tc.Type == "none" && tc.Name == "" && !tc.DisableParallelToolUse:
		return sdk.ToolChoiceUnionParam{OfNone: &sdk.ToolChoiceNoneParam{}}, nil
	}
	data, err := wire(tc)
	if err != nil {
		return sdk.ToolChoiceUnionParam{}, err
	}
	return param.Override[sdk.ToolChoiceUnionParam](data), nil
}

func thinking(t llm.Thinking) (sdk.ThinkingConfigParamUnion, error) {
	switch {
	case t.Type == "enabled" && t.BudgetTokens > 0:
		return sdk.ThinkingConfigParamUnion{OfEnabled: &sdk.ThinkingConfigEnabledParam{BudgetTokens: int64(t.BudgetTokens), Display: sdk.ThinkingConfigEnabledDisplay(t.Display)}}, nil
	case t.Type == "adaptive" && t.BudgetTokens == 0:
		return sdk.ThinkingConfigParamUnion{OfAdaptive: &sdk.ThinkingConfigAdaptiveParam{Display: sdk.ThinkingConfigAdaptiveDisplay(t.Display)}}, nil
	case t.Type == "disabled" && t.BudgetTokens == 0 && t.Display == "":
		return sdk.ThinkingConfigParamUnion{OfDisabled: &sdk.ThinkingConfigDisabledParam{}}, nil
	case t.Type == "between_tools" && t.BudgetTokens == 0 && t.Display == "":
		return sdk.ThinkingConfigParamUnion{OfBetweenTools: &sdk.ThinkingConfigBetweenToolsParam{}}, nil
	}
	data, err := wire(t)
	if err != nil {
		return sdk.ThinkingConfigParamUnion{}, err
	}
	return param.Override[sdk.ThinkingConfigParamUnion](data), nil
}
