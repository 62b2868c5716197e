// Package llmtest is the test kit for code that talks to an LLM: a strict
// fake Anthropic Messages API over HTTP (Server) that real SDK clients and
// binaries can be pointed at, playing a script of canned responses
// (package llm/script, docs/scripts.md). It imports net/http/httptest and
// is only ever imported by tests, so no release binary links it.
//
// The server is strict on purpose: every request is checked with
// llm.CheckRequest, for the headers and fields the API insists on (an
// anthropic-beta value only for a tool the API accepts only with it), and
// for the thinking it served coming back as the API requires (see
// package script); a violation is answered the way the API answers it, a
// 400 invalid_request_error, so a kernel that breaks the API's rules fails
// its tests instead of failing later against the real API. It refuses
// nothing the API accepts: an edited assistant turn goes through.
//
// A request with "stream": true is answered with the API's server-sent
// events; SetEventDelay paces them and BreakStream breaks a stream the
// ways the API's break (an error event, a dropped connection, a stall).
// The estimated usage shows what the API's prompt cache would read and
// write (package script; SetClock moves its clock).
//
// The server keeps every request and its answer (Received). Tests of the
// round-trip guarantee call CheckRoundTrips, which fails when a block the
// server served came back changed in a later request.
package llmtest
