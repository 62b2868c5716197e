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
// comma-separated, with the values the request's tools need (see
// Betas). The SDK's retries are off: each Messages call is one
// HTTP request, and llm.Client does the retrying.
//
// Every request streams (the SDK's Messages.NewStreaming): the SDK refuses
// a request that does not stream once it expects it to take over ten
// minutes, and a person wants to see the answer arrive. Config.Timeout
// (10 minutes when 0) is the stall limit: the longest a request waits with
// nothing arriving, for the answer to begin or for its next event (pings
// count); a long answer that keeps arriving is never cut off.
//
// # Requests
//
// An llm.Request is mapped onto anthropic.MessageNewParams. The top-level
// settings go through the SDK's typed params when they hold all of the
// value (the SDK reads model and max_tokens to pick its timeout), and as
// their own wire JSON through param.Override when they would not:
//
//   - typed: model, max_tokens, temperature, stop_sequences,
//     metadata.user_id, container, system text blocks, tool_choice,
//     thinking (enabled with budget_tokens, adaptive, disabled,
//     between_tools, with display), cache_control, and client tools
//     (input_schema and Options passed as given, allowed_callers).
//   - raw JSON: server tools (web_search_…, web_fetch_…, code_execution_…),
//     because the SDK has one typed param per dated version and would
//     refuse a version, or drop an option, it does not know; and anything
//     else a typed param cannot express (an unknown tool_choice or thinking
//     type).
//
// Message content blocks always go as their own wire JSON, what package
// llm's MarshalJSON writes: for a block that came from the API, the bytes
// it came as (see llm.ContentBlock). The SDK's typed block params would
// re-encode a block and drop what they do not hold; they dropped the caller
// of a tool_use made by code execution.
//
// The SDK's encoder compacts the JSON it sends and escapes <, > and & (and
// U+2028/U+2029) in strings as \u003c and so on, exactly as encoding/json
// does when package llm marshals a Request. Blocks therefore reach the
// wire byte for byte when they are compact and free of those characters,
// and as the same JSON value otherwise.
//
// # Beta headers
//
// The anthropic-beta header is Config.Betas followed by the value each of
// the request's tools needs (RequiredBeta), every value once; no header
// when there is none. Which tool needs which value is read from this SDK
// version (v1.84.0): the server tools the kernels use (web search, web
// fetch, code execution in all their versions) and programmatic tool
// calling are part of its generally available Messages API and need none;
// only the tool versions it has on its beta surface alone (computer use,
// the advisor tool) do. See docs/llm.md#beta-headers for the table.
//
// # Responses
//
// The llm.Response is assembled from the raw JSON of the stream's events
// (llm.StreamAssembler), not from the SDK's typed events: each block is
// the JSON its content_block_start carried with the members its deltas
// built set in place, so blocks of types llm does not interpret keep their
// exact bytes, thinking and signatures come back as sent, and usage (with
// the cache fields and their 5m/1h split), stop_reason and the
// code-execution container are read as the API sent them. The pieces go to
// the request's OnDelta as they arrive. A stream that ends before
// message_stop is a connection error, never a partial answer.
//
// # Errors
//
//   - An HTTP error answer becomes *llm.APIError with the status, the type
//     and message from the body's {"type":"error","error":{…}}, the
//     retry-after header (delay seconds or an HTTP date) and the request-id
//     header.
//   - An error event that breaks off a stream (overloaded_error,
//     api_error, …) becomes llm.StreamError: the status the API gives its
//     type outside a stream, marked InStream (the attempt may have been
//     billed).
//   - A failure after the request was handed to the HTTP client (no
//     response, a connection dropped mid-stream, a stall longer than
//     Config.Timeout) becomes llm.ConnectionError, which llm.Client
//     retries.
//   - When the caller's context is done, its error is returned as is.
//   - A request that could not be built or encoded is a plain error, not
//     retried.
package anthropic
