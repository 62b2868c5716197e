package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/llmkernels/kernels/llm"
)

// params maps a Messages request to Chat Completions parameters, or
// returns an ErrUnsupported error naming everything it cannot express.
func (p *Provider) params(req *llm.Request) (oai.ChatCompletionNewParams, error) {
	var problems []string
	refuse := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	var out oai.ChatCompletionNewParams
	out.Model = shared.ChatModel(req.Model)

	if req.Thinking.On() {
		refuse("thinking %q: Chat Completions has no extended thinking; remove it (or set \"disabled\"), or use the anthropic provider", req.Thinking.Type)
	}
	if req.Container != "" {
		refuse("container %q: code-execution containers exist only on Anthropic; use the anthropic provider", req.Container)
	}

	if len(req.MCPServers) > 0 {
		names := make([]string, len(req.MCPServers))
		for i, s := range req.MCPServers {
			names[i] = s.Name
		}
		refuse("mcp_servers %s: only Anthropic's MCP connector calls MCP servers itself; use the anthropic provider, or have the kernel call them", strings.Join(names, ", "))
	}
	var server []string
	for _, t := range req.Tools {
		switch {
		case t.Type == llm.ToolMCPToolset:
			continue // refused with mcp_servers above
		case t.IsServer():
			server = append(server, fmt.Sprintf("%s (%s)", t.Name, t.Type))
			continue
		}
		fn, err := functionTool(t)
		if err != nil {
			refuse("%v", err)
			continue
		}
		out.Tools = append(out.Tools, fn)
	}
	if len(server) > 0 {
		refuse("Anthropic server tools %s: only Anthropic runs them; use the anthropic provider, or remove them", strings.Join(server, ", "))
	}

	if sys := systemText(req.System); sys != "" {
		out.Messages = append(out.Messages, oai.SystemMessage(sys))
	}
	for i, m := range req.Messages {
		msgs, err := messages(i, m)
		if err != nil {
			refuse("%v", err)
			continue
		}
		out.Messages = append(out.Messages, msgs...)
	}

	if tc := req.ToolChoice; tc != nil && len(out.Tools) > 0 {
		// OpenAI rejects tool_choice and parallel_tool_calls without tools.
		switch tc.Type {
		case "auto", "":
			out.ToolChoice.OfAuto = oai.String(string(oai.ChatCompletionToolChoiceOptionAutoAuto))
		case "any":
			out.ToolChoice.OfAuto = oai.String(string(oai.ChatCompletionToolChoiceOptionAutoRequired))
		case "none":
			out.ToolChoice.OfAuto = oai.String(string(oai.ChatCompletionToolChoiceOptionAutoNone))
		case "tool":
			out.ToolChoice = oai.ToolChoiceOptionFunctionToolChoice(oai.ChatCompletionNamedToolChoiceFunctionParam{Name: tc.Name})
		default:
			refuse("tool_choice %q: want auto, any, tool or none", tc.Type)
		}
		if tc.DisableParallelToolUse {
			out.ParallelToolCalls = oai.Bool(false)
		}
	}

	if req.MaxTokens > 0 {
		if p.legacyMaxTokens {
			out.MaxTokens = oai.Int(int64(req.MaxTokens))
		} else {
			out.MaxCompletionTokens = oai.Int(int64(req.MaxTokens))
		}
	}
	if req.Temperature != nil {
		out.Temperature = oai.Float(*req.Temperature)
	}
	if len(req.StopSequences) > 0 {
		out.Stop.OfStringArray = append([]string(nil), req.StopSequences...)
	}
	if req.Metadata != nil && req.Metadata.UserID != "" {
		out.User = oai.String(req.Metadata.UserID)
	}

	if len(problems) > 0 {
		return oai.ChatCompletionNewParams{}, fmt.Errorf("%w: %s", ErrUnsupported, strings.Join(problems, "; "))
	}
	return out, nil
}

// systemText joins the system blocks' texts with blank lines.
func systemText(blocks []llm.SystemBlock) string {
	texts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		if b.Text != "" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n\n")
}

// functionTool maps a client tool to a function tool. The schema's
// top-level members are passed as raw JSON so the order of "properties",
// which models follow when writing arguments, is kept.
func functionTool(t llm.Tool) (oai.ChatCompletionToolUnionParam, error) {
	fn := shared.FunctionDefinitionParam{Name: t.Name}
	if t.Description != "" {
		fn.Description = oai.String(t.Description)
	}
	schema := t.InputSchema
	if len(bytes.TrimSpace(schema)) == 0 {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(schema, &members); err != nil {
		return oai.ChatCompletionToolUnionParam{}, fmt.Errorf("tool %q: input_schema is not a JSON object: %v", t.Name, err)
	}
	fn.Parameters = make(shared.FunctionParameters, len(members))
	for k, v := range members {
		fn.Parameters[k] = v
	}
	return oai.ChatCompletionFunctionTool(fn), nil
}

// messages maps message i to one or more Chat Completions messages.
func messages(i int, m llm.Message) ([]oai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case llm.RoleUser:
		return userMessages(i, m.Content)
	case llm.RoleAssistant:
		msg, err := assistantMessage(i, m.Content)
		if err != nil {
			return nil, err
		}
		return []oai.ChatCompletionMessageParamUnion{msg}, nil
	}
	return nil, fmt.Errorf("messages.%d: role %q: want user or assistant", i, m.Role)
}

// userMessages maps a user turn: each tool_result becomes a "tool" message
// (they must directly follow the assistant's tool_calls, so they come
// first), then the turn's text and images, if any, become one user message.
// Images a tool returned cannot go in a tool message; they open that user
// message, after a line naming the tool call they came from.
func userMessages(i int, blocks []llm.ContentBlock) ([]oai.ChatCompletionMessageParamUnion, error) {
	var out []oai.ChatCompletionMessageParamUnion
	var toolImages, parts []oai.ChatCompletionContentPartUnionParam
	var problems []string
	for j, b := range blocks {
		where := fmt.Sprintf("messages.%d.content.%d", i, j)
		switch b.Type {
		case llm.BlockText:
			parts = append(parts, oai.TextContentPart(b.Text))
		case llm.BlockImage:
			part, err := imagePart(where, b.Source)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			parts = append(parts, part)
		case llm.BlockToolResult:
			text, images, err := toolResult(where, b)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			out = append(out, oai.ToolMessage(text, b.ToolUseID))
			if len(images) > 0 {
				toolImages = append(toolImages, oai.TextContentPart(fmt.Sprintf("[images returned by tool call %s]", b.ToolUseID)))
				toolImages = append(toolImages, images...)
			}
		default:
			problems = append(problems, unsupportedBlock(where, b))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	parts = append(toolImages, parts...)
	switch {
	case len(parts) == 1 && parts[0].OfText != nil:
		// A plain string is what every OpenAI-compatible server accepts.
		out = append(out, oai.UserMessage(parts[0].OfText.Text))
	case len(parts) > 0:
		out = append(out, oai.UserMessage(parts))
	case len(out) == 0:
		out = append(out, oai.UserMessage(""))
	}
	return out, nil
}

// toolResult renders a tool_result's content as the tool message's text:
// the string, or the text blocks joined by blank lines. An error result is
// prefixed with "Error: " because tool messages have no error flag.
func toolResult(where string, b llm.ContentBlock) (string, []oai.ChatCompletionContentPartUnionParam, error) {
	text := b.Content.Text
	var images []oai.ChatCompletionContentPartUnionParam
	if b.Content.Blocks != nil {
		var texts, problems []string
		for k, c := range b.Content.Blocks {
			inner := fmt.Sprintf("%s.content.%d", where, k)
			switch c.Type {
			case llm.BlockText:
				texts = append(texts, c.Text)
			case llm.BlockImage:
				part, err := imagePart(inner, c.Source)
				if err != nil {
					problems = append(problems, err.Error())
					continue
				}
				images = append(images, part)
			default:
				problems = append(problems, unsupportedBlock(inner, c))
			}
		}
		if len(problems) > 0 {
			return "", nil, fmt.Errorf("%s", strings.Join(problems, "; "))
		}
		text = strings.Join(texts, "\n\n")
	}
	if len(images) > 0 {
		note := fmt.Sprintf("[%d image(s) attached to the next user message]", len(images))
		if text == "" {
			text = note
		} else {
			text += "\n\n" + note
		}
	}
	if b.IsError {
		text = "Error: " + text
	}
	return text, images, nil
}

// imagePart maps an image source: base64 data becomes a data URL, a URL
// is passed as is.
func imagePart(where string, src *llm.ImageSource) (oai.ChatCompletionContentPartUnionParam, error) {
	if src == nil {
		return oai.ChatCompletionContentPartUnionParam{}, fmt.Errorf("%s: image block has no source", where)
	}
	var u string
	switch src.Type {
	case "base64":
		if src.MediaType == "" {
			return oai.ChatCompletionContentPartUnionParam{}, fmt.Errorf("%s: base64 image has no media_type (want e.g. image/png)", where)
		}
		u = "data:" + src.MediaType + ";base64," + src.Data
	case "url":
		u = src.URL
	default:
		return oai.ChatCompletionContentPartUnionParam{}, fmt.Errorf("%s: image source type %q: only base64 and url images can be sent to Chat Completions", where, src.Type)
	}
	return oai.ImageContentPart(oai.ChatCompletionContentPartImageImageURLParam{URL: u}), nil
}

// assistantMessage maps an assistant turn: its text blocks, concatenated
// as llm.Message.Text does, become the content, its tool_use blocks the
// tool_calls.
func assistantMessage(i int, blocks []llm.ContentBlock) (oai.ChatCompletionMessageParamUnion, error) {
	var msg oai.ChatCompletionAssistantMessageParam
	var text strings.Builder
	var problems []string
	for j, b := range blocks {
		where := fmt.Sprintf("messages.%d.content.%d", i, j)
		switch b.Type {
		case llm.BlockText:
			text.WriteString(b.Text)
		case llm.BlockToolUse:
			if len(b.Caller) > 0 {
				problems = append(problems, fmt.Sprintf("%s: tool_use %s was made by Anthropic code execution (caller %s); continue this conversation with the anthropic provider", where, b.ID, b.Caller))
				continue
			}
			msg.ToolCalls = append(msg.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
					ID: b.ID,
					Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      b.Name,
						Arguments: arguments(b.Input),
					},
				},
			})
		default:
			problems = append(problems, unsupportedBlock(where, b))
		}
	}
	if len(problems) > 0 {
		return oai.ChatCompletionMessageParamUnion{}, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	if text.Len() > 0 || len(msg.ToolCalls) == 0 {
		msg.Content.OfString = oai.String(text.String())
	}
	return oai.ChatCompletionMessageParamUnion{OfAssistant: &msg}, nil
}

// arguments is the tool call's arguments string for a tool_use input. An
// input that is a JSON string holds arguments the model wrote that were
// not a JSON object (see toolUse); they go back exactly as written.
func arguments(input json.RawMessage) string {
	trimmed := bytes.TrimSpace(input)
	if len(trimmed) == 0 {
		return "{}"
	}
	if trimmed[0] == '"' {
		var raw string
		if json.Unmarshal(trimmed, &raw) == nil {
			return raw
		}
	}
	return string(trimmed)
}

// unsupportedBlock explains why a block cannot be sent.
func unsupportedBlock(where string, b llm.ContentBlock) string {
	switch b.Type {
	case llm.BlockThinking, llm.BlockRedactedThinking:
		return fmt.Sprintf("%s: %s block: Chat Completions cannot take Anthropic thinking back; continue this conversation with the anthropic provider", where, b.Type)
	case llm.BlockToolUse:
		return fmt.Sprintf("%s: tool_use block in a user message: only assistant messages call tools", where)
	case llm.BlockToolResult:
		return fmt.Sprintf("%s: tool_result block in an assistant message: only user messages answer tools", where)
	case llm.BlockImage:
		return fmt.Sprintf("%s: image block in an assistant message: Chat Completions takes images from the user only", where)
	}
	return fmt.Sprintf("%s: %q block: Chat Completions has no equivalent (server tool calls and results, documents and other Anthropic-only blocks need the anthropic provider)", where, b.Type)
}
