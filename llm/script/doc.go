// Package script plays a script of canned Messages API responses (see
// docs/scripts.md). Provider is the in-process llm.Provider behind
// `--provider script`, a user feature for demos and offline runs; the
// strict fake HTTP server in llm/llmtest plays the same scripts for tests
// and is never linked into a binary.
//
// Both are strict on purpose: every request is checked with
// llm.CheckRequest and a violation is answered the way the API answers it,
// a 400 invalid_request_error, so a kernel that breaks the API's rules
// fails its tests instead of failing later against the real API. With
// thinking on, a Player also holds requests to the thinking it served: a
// thinking block comes back with the text it was signed with, and the turn
// a request continues keeps every thinking and redacted_thinking block it
// was served with, in order (see echoes, and docs/scripts.md). Turns that
// are not continued may lose their thinking, as the API allows.
//
// Answers reach the request's OnDelta in the pieces a stream of them would
// carry. Usage left out of a script is estimated, split as the API's
// prompt cache would split it (cache.go, docs/scripts.md#prompt-caching).
//
// A Script is immutable. Each Provider and each server built from it keeps
// its own record (a Player) of which entries it has used: the first unused
// entry whose match holds answers a request, so concurrent callers whose
// requests are told apart by "match" get deterministic answers.
package script
