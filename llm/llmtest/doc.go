// Package llmtest is how tests and offline demos talk to an "LLM": a script
// of canned Messages API responses (see docs/scripts.md), played either by
// an in-process llm.Provider (Scripted) or by a strict fake Anthropic HTTP
// server (Server) that real SDK clients can be pointed at.
//
// Both are strict on purpose: every request is checked with llm.CheckRequest
// (and, by the server, for the headers and fields the API insists on) and a
// violation is answered the way the API answers it, a 400
// invalid_request_error, so a kernel that breaks the API's rules fails its
// tests instead of failing later against the real API.
//
// A Script is immutable. Each Scripted and each Server built from it keeps
// its own record of which entries it has used: the first unused entry whose
// match holds answers a request, so concurrent callers whose requests are
// told apart by "match" get deterministic answers.
package llmtest
