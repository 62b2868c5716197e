// Package anthropic is the llm.Provider for Anthropic's Messages API, on the
// official Go SDK (github.com/anthropics/anthropic-sdk-go).
//
//	p, err := anthropic.New(anthropic.Config{}) // key from ANTHROPIC_API_KEY
//	c := &llm.Client{Provider: p}
//
// # Configuration
//
// New takes the API key from Config.APIKey, else ANTHROPIC_API_KEY, and
// fails without one. The base URL (a proxy or gateway) comes from
// Config.BaseURL, else ANTHROPIC_BASE_URL, else the SDK's default. The SDK's
// own credential chain (ANTHROPIC_AUTH_TOKEN, profiles,
// ANTHROPIC_CUSTOM_HEADERS) is switched off so that these two variables are
// the whole story. Config.Betas go out as one anthropic-beta header,
// comma-separated. The SDK's retries are off: each Messages call is one
// HTTP request, and llm.Client does the retrying.
//
// Without Config.Timeout the SDK picks a per-request timeout from max_tokens
// and refuses non-streaming requests it expects to take over ten minutes
// (max_tokens above 21,333, or above 8,192 on Claude Opus 4 and 4.1).
// Messages reports that before sending; set Config.Timeout to send such a
// request anyway.
//
// # Requests
//
// An llm.Request is mapped onto anthropic.MessageNewParams. A value goes
// through the SDK's typed param when that param holds all of it, and as its
// own wire JSON (what package llm's MarshalJSON writes) through
// param.Override when a typed param would lose something:
//
//   - typed: model, max_tokens, temperature, stop_sequences,
//     metadata.user_id, container, system text blocks, tool_choice,
//     thinking (enabled with budget_tokens, adaptive, disabled),
//     cache_control, client tools (input_schema and Options passed as given,
//     allowed_callers), and the blocks text, image (base64 or url),
//     tool_use, thinking (with signature) and redacted_thinking.
//   - raw JSON: every block type llm keeps raw (server_tool_use,
//     web_search_tool_result, code_execution_tool_result, container_upload,
//     …, their bytes as received); tool_result, because its content is a
//     string or a list that may hold any block and the typed param only has
//     the list; text carrying citations, kept exactly as given; and server
//     tools (web_search_…, web_fetch_…, code_execution_…), because the SDK
//     has one typed param per dated version and would refuse a version, or
//     drop an option, it does not know. Anything else a typed param cannot
//     express (an unknown tool_choice or thinking type) also goes raw.
//
// The SDK's encoder compacts the JSON it sends and escapes <, > and & (and
// U+2028/U+2029) in strings as \u003c and so on, exactly as encoding/json
// does when package llm marshals a Request. Raw blocks therefore reach the
// wire byte for byte when they are compact and free of those characters,
// and as the same JSON value otherwise.
//
// # Responses
//
// The llm.Response is decoded from the SDK message's RawJSON, the response
// body as received, not from the SDK's typed message: blocks of types llm
// does not interpret keep their exact bytes, and usage (with
// cache_creation_input_tokens and cache_read_input_tokens), stop_reason and
// the code-execution container are read as the API sent them.
//
// # Errors
//
//   - An HTTP error answer becomes *llm.APIError with the status, the type
//     and message from the body's {"type":"error","error":{…}}, the
//     retry-after header (delay seconds or an HTTP date) and the request-id
//     header.
//   - A failure after the request was handed to the HTTP client (no
//     response, a dropped body, a Config.Timeout that expired) becomes
//     llm.ConnectionError, which llm.Client retries.
//   - When the caller's context is done, its error is returned as is.
//   - A request that could not be built or encoded is a plain error, not
//     retried.
package anthropic
