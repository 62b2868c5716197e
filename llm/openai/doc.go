// Package openai is the llm.Provider for OpenAI's Chat Completions API and
// the servers that speak it (Ollama, vLLM, llama.cpp), on the official Go
// SDK (github.com/openai/openai-go/v3).
//
//	p, err := openai.New(openai.Config{}) // OPENAI_API_KEY, or OPENAI_BASE_URL
//	c := &llm.Client{Provider: p}
//
// # Configuration
//
// The key comes from Config.APIKey, else OPENAI_API_KEY; the base URL from
// Config.BaseURL, else OPENAI_BASE_URL, else the OpenAI API. A base URL
// without a key is taken to be a local server: the placeholder key "no-key"
// is sent, since those servers ignore it. With neither, New fails and says
// to set OPENAI_API_KEY or OPENAI_BASE_URL. The SDK still reads its other
// variables (OPENAI_ORG_ID, OPENAI_PROJECT_ID, OPENAI_CUSTOM_HEADERS); it
// has no public switch to turn them off. The SDK's retries are off: each
// Messages call is one HTTP request (two when a server refuses streaming,
// below), and llm.Client retries.
//
// # Streaming
//
// Requests stream (the SDK's ChatCompletionService.NewStreaming, with
// stream_options.include_usage): the text and each tool call's arguments
// reach the request's OnDelta as they arrive, and the answer is assembled
// from the chunks (the usage of the last chunk that gives one). A stream
// that ends without a finish_reason is a connection error, never a partial
// answer. Config.Timeout (10 minutes when 0) is the stall limit: the
// longest a request waits with nothing arriving. A server that does not
// stream is found from its answer: a whole chat completion to a streaming
// request is read as the answer; a 400, 422 or 501 whose message names
// streaming is followed at once by the same request without streaming.
// Either way the answer's Notes say so once, and later requests go without
// streaming (limited to Config.Timeout as a whole), their answers' pieces
// still handed to OnDelta.
//
// # Requests
//
//	llm.Request                        Chat Completions
//	system blocks                      one "system" message, texts joined by a blank line
//	user text                          "user" message: a string for one text block, else content parts
//	user image, base64 / url           image_url part: data:<media_type>;base64,<data> / the URL
//	assistant text + tool_use          "assistant" message: content (texts concatenated) and
//	                                   tool_calls (id, function name, arguments = input JSON)
//	tool_result                        a "tool" message with tool_call_id, before the turn's other
//	                                   content; block content → its text blocks joined by a blank
//	                                   line; is_error → content prefixed "Error: "
//	tools (client)                     function tools, parameters = input_schema (property order kept)
//	tool_choice auto/any/tool/none     "auto" / "required" / named function / "none"
//	disable_parallel_tool_use          parallel_tool_calls: false
//	max_tokens                         max_completion_tokens (OpenAI) or max_tokens (other servers)
//	temperature                        temperature
//	stop_sequences                     stop
//	metadata.user_id                   user
//	cache_control (blocks, top level)  ignored: OpenAI caches prompts on its own
//
// max_tokens: OpenAI's reasoning models reject max_tokens, while older
// Ollama, llama.cpp and vLLM servers know only max_tokens and would ignore
// max_completion_tokens, generating without limit. So max_completion_tokens
// goes to api.openai.com and *.openai.azure.com (and when no base URL is
// set), max_tokens to every other base URL.
//
// tool_choice and parallel_tool_calls are sent only with tools, as OpenAI
// rejects them otherwise. Images in a tool_result cannot go in a tool
// message: the tool message notes "[N image(s) attached to the next user
// message]" and the images open that user message after a line naming the
// tool call. Citations on text blocks, and a client tool's Options and
// allowed_callers, are not sent (they mean something only to Anthropic).
//
// # Refused
//
// What Chat Completions cannot express fails before anything is sent, with
// an error wrapping ErrUnsupported that names each offending part and,
// where it applies, says to use the anthropic provider. It is not an
// *llm.APIError: sending it again cannot succeed.
//
//   - Anthropic server tools in Tools (web_search_…, web_fetch_…,
//     code_execution_…), named with their versions;
//   - mcp_servers (Anthropic's MCP connector), named;
//   - thinking "enabled" or "adaptive" ("disabled" is fine);
//   - container (code execution);
//   - in the history: thinking and redacted_thinking blocks, tool_use
//     blocks made by code execution (Caller set), and every block llm keeps
//     raw (server_tool_use, web_search_tool_result, document, …);
//   - image sources other than base64 and url, and base64 without media_type.
//
// # Responses
//
// The first choice becomes the response: id and model as sent (the
// request's model when the server leaves it out); content = one text block
// when the text is not empty, then one tool_use block per function call.
// When the message has no content but a refusal, the refusal is the text
// and the stop reason is "refusal".
//
//	finish_reason    stop_reason
//	stop             end_turn (tool_use when the message has tool calls: some
//	                 local servers say "stop" after calling tools)
//	tool_calls       tool_use
//	length           max_tokens
//	content_filter   refusal
//
// Usage: prompt_tokens minus prompt_tokens_details.cached_tokens is
// input_tokens, cached_tokens is cache_read_input_tokens, completion_tokens
// is output_tokens. cache_write_tokens stays in input_tokens: it is a part
// of prompt_tokens, and the price table has no cache-write rate for OpenAI
// models.
//
// Tool arguments: arguments that are a JSON object are the tool_use input
// as written; empty arguments are {} (a call without parameters). Other
// arguments (JSON cut off by max_tokens, malformed, or not an object) are
// kept verbatim as an input that is a JSON string: decoding it into an
// object or struct fails, so the handler reports an error to the model
// instead of running with missing fields, and when the turn is sent back
// the string goes out unchanged as that call's arguments. A tool call
// without an id (some local servers) gets a fresh "call_…" id.
//
// # Errors
//
//   - An HTTP error answer (*openai.Error) becomes *llm.APIError with the
//     status; the type, with the code after a slash when there is one
//     ("requests/rate_limit_exceeded"); the message; retry-after-ms or
//     retry-after (seconds or an HTTP date); and the x-request-id header.
//     Error bodies in other servers' shapes ({"error": "text"}, vLLM's flat
//     {"message", "type", "code"}, plain text) still give their message.
//   - A success body that is not a usable chat completion becomes an
//     *llm.APIError of type "invalid_response" with the answer's status.
//   - A request that went out and got no answer (refused connection,
//     a body or stream cut off, nothing arriving for Config.Timeout)
//     becomes llm.ConnectionError, which llm.Client retries; the message
//     names the server.
//   - The caller's cancelled or expired context is returned as is, and a
//     request that could not be built is a plain error; neither is retried.
package openai
