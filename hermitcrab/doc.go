// Package hermitcrab is the Hermitcrab kernel: an LLM instance kept in
// pscale blocks, woken by a boot call that ends when it builds its own
// React interface, and talked to through callLLM.
//
// The contract is hermitcrab-g1-architecture.md (the system as built), with
// the clean-build and v3-plan specs as design intent. The kernel runs in Go
// and keeps its blocks, conversations and shell sources in one SQLite file
// (package store); a browser is only needed for what only a browser can do
// (rendering the shell, and the browser tools relayed to its page).
//
// Every call reads the blocks anew: the tier's parameters from wake
// 0.9.4–6 and its system prompt compiled from the instructions at wake
// 0.9.1–3 (package prompt). So a write to wake 0.9.6.1 changes the next deep
// call's model, and a write to wake 0.9.3 changes what the next deep call
// sees.
//
// Differences from the original kernel, and choices where the specs are
// silent (each pinned by a test):
//   - Blocks live in SQLite with a version per block; a write made on a
//     stale read is redone on the newest version (EditBlock), so concurrent
//     writers never lose each other's edits. Block names are 1–64 of
//     [a-z0-9_-]; every write path enforces a size limit (64 KiB default).
//   - Addresses are strings; a number is accepted, with the digits JSON kept.
//     A path that leaves the tree is an error naming the missing digit and
//     the children that exist, never an empty answer or the last node.
//   - A wake instruction that cannot run shows its failure inside the
//     prompt instead of failing the call, so the instance can repair its own
//     wake block; tier parameters that are missing or malformed fall back
//     to the §6.3 defaults with a note.
//   - The thinking budget is kept below max_tokens by raising max_tokens
//     (llm.Normalize), and the change is reported in the call's notes.
//   - Trimming (§8.5) keeps the last max_messages messages but moves the
//     cut forward to a user turn that is not a tool result, so a tool_use is
//     never separated from its tool_result; a notice joins the first kept
//     turn. The stored conversation keeps everything.
//   - compress writes the light tier's summary or emergence to the "_" of
//     the node whose nine children it read (the original wrote to the
//     parent); the children stay.
//   - Auto-save (§8.4) writes at most 500 characters of each reply to the
//     next free digit under history 0; when 1–9 are full it writes nothing
//     and says so in the call's notes and the log.
//   - The touchstone (the keystone) is embedded and persisted; a persisted
//     copy changed after the embedded one was released wins, an older one
//     is replaced (a kernel upgrade).
//   - The active tool set (set_tools) is persisted. Server tools are sent
//     only to the Anthropic provider. Browser tools with no page attached
//     answer an error saying so.
//   - The code-execution container id is kept in the store and sent on
//     every later call, so the sandbox's files persist across calls.
//   - The system prompt and the last tool carry cache_control, so repeated
//     calls bill cache reads.
package hermitcrab
