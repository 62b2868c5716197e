// Package conversation is callLLM (spec §9.3): a Caller compiles a tier's
// system prompt from the blocks, trims the conversation to the tier's
// window, runs the tool loop with the instance's tools (the ones the LLM
// chose with set_tools, or the boot set), and auto-saves the reply to the
// history block, compressing and growing it as it fills. It keeps the
// conversations, the LLM client, and the clean-up of the shell's raw API
// requests. Everything is read anew on every call, so the LLM's writes to
// its wake block steer the next call. See docs/hermitcrab.md (tiers, tools,
// boot and chat) and docs/design/hermitcrab.md.
package conversation
