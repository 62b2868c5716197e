// Package llm is the provider-neutral LLM runtime the kernels share:
// Anthropic-shaped message types, the Provider interface, a Client that
// retries, falls back along a model chain and meters cost, the tool Loop,
// and AskJSON for structured output.
//
// Choices made where the API or the specs leave room, each pinned by a test:
//
//   - Every content block decoded from JSON keeps its bytes in
//     ContentBlock.Raw, whatever its type, and is written back as those
//     bytes while its fields still hold what they hold; a changed block is
//     written from its fields plus the members of Raw no field holds (for a
//     type the runtime does not interpret, the fields are its type, which
//     cannot change, and cache_control). No edit is lost to stale bytes. So
//     every block the API sends comes back byte for byte (a tool_use's
//     caller, members added to the API later, the API's member order)
//     where the JSON is compact, which is what the API sends:
//     encoding/json drops whitespace between tokens of any value it writes.
//     MarshalWire also keeps <, > and & unescaped.
//   - Thinking: CheckRequest keeps manual thinking's rules ("enabled": a
//     continued tool turn starts with thinking, no forced tool_choice) and
//     applies neither to adaptive thinking, where the model may answer a
//     turn without thinking and a forced tool_choice is accepted. Whether
//     the thinking the API sent came back unchanged only whoever served it
//     can tell; llm/script checks it against what it served.
//   - Retries: 408, 409, 429, 500, 502, 503, 504, 529 and connection
//     failures, up to RetryPolicy.MaxAttempts per model; the wait is the
//     provider's retry-after when given, else a random point in the upper
//     half of base·2^(n−1) (half jitter, never near zero), capped per wait
//     and in total. Adapters never retry on their own. A Send its context
//     ends while none of its requests awaits an answer (before sending, or
//     in a back-off) and every earlier attempt was refused (409, 429, 503,
//     529) fails marked ErrNotInFlight: nothing was billed. After no
//     answer, a 408 or another 5xx it is not marked: that may be billed.
//   - Fallback: a model is unavailable on 404 or on overload (529) that
//     outlasts the retries; any other error ends the call at once.
//   - Streaming: every adapter streams and hands pieces to
//     Request.OnDelta; a stream that breaks off (an error event, a cut,
//     a stall) is an error retried as a whole, counted as possibly
//     billed, and announced to OnDelta as DeltaRestart before the next
//     attempt. A partial answer is never returned.
//   - Normalize raises max_tokens to budget+4096 when a thinking budget is
//     not below it, and drops a temperature other than 1 while thinking is
//     on; both are reported in Result.Notes. Every other rule the API
//     enforces (tool_use/tool_result pairing, non-empty content, unique tool
//     names, …) is an *InvalidRequestError raised before the request is sent.
//     Never a rule the API does not have: consecutive messages of one role
//     are one turn to the API (it combines them), so they are checked as
//     one, and the final assistant message may be empty.
//   - pause_turn: the paused assistant turn is sent back as the last message
//     with no new user text; the continuation's blocks join that same turn,
//     so the history keeps alternating roles.
//   - A handler asking to stop (ToolOutput.Stop) ends the loop after the
//     tool results of that turn are appended, so Result.Messages is always a
//     history that can be sent again.
//   - Tool results longer than Loop.MaxResultChars characters are cut at a
//     character boundary with a note "[output cut: N of M characters omitted]".
//   - AskJSON puts the schema in the system prompt (it works with every
//     provider, unlike forced tool use, which thinking forbids), accepts JSON
//     inside prose or a code fence, and re-asks with the validation errors
//     quoted.
package llm
