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
// The kernel's own operations are one plain API, which the LLM's tool
// adapters (tools.go), the CLI and the web server all call, so a rule lives
// in one place: blocks (blocks.go: Block, RawBlock, ReadNode, WriteAt, BSP,
// Resolve, ListBlocks, CreateBlock, EditBlock), memory (memory.go:
// WriteEntry, Compress, and auto-save's growth), shells (shells.go:
// Recompile, ShellSource, LastGoodShell, ShellRendered), tools
// (toolset.go: SetTools, ActiveTools, KnownTools), the key (key.go:
// StoredKey, SetKey, ClearKey, and the local secrets WebhookSecret and
// MCPToken), calls (call.go, conversation.go: Call, Boot, Say, ToolLoop,
// CleanAPIRequest), the network (network.go: Identity, Beach,
// PublishPassport, Passport(s), Mark(s), SendMessage, FetchInbox,
// CheckInbox, SaveToBeach, RestoreFromBeach) and wake triggers (wake.go:
// RunTriggers, RunWakes, Status, Webhook, CompilePrompt). Nothing outside
// reaches the store.
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
//     turn. A window with no such turn (the tool loop stopped at its limit
//     line after line) is cut at its first user turn all the same, a
//     combined turn kept whole, and tool results whose calls fall out
//     become a line saying so: the window stays bounded. The stored
//     conversation keeps everything.
//   - compress writes the light tier's summary or emergence to the "_" of
//     the node whose nine children it read (the original wrote to the
//     parent); the children stay. Compressing a block's top, whose text is
//     the block's description, grows the block instead (pscale.Grow), so
//     the description is never overwritten.
//   - Auto-save (§8.4) writes at most 500 characters of each reply as the
//     newest entry of history (pscale.AppendEntry). A full node is
//     compressed by the light tier and the next opens; a full top grows the
//     block (the clean-build spec's Memory block), so saving never stops. A
//     compression that fails does not lose the entry (it is saved past the
//     node, which a later exchange compresses). Near the block size limit
//     the oldest compressed node moves to a block of its own, history-N;
//     when none is compressed (the light tier keeps failing), the oldest
//     full one moves uncompressed, so saving never stops.
//   - write_entry without a path appends the same way, but asks the LLM to
//     compress a full node instead of doing it.
//   - A conversation is made continuable before each call: a tool_use left
//     unanswered gets an error result. A line typed after the tool loop
//     stopped at max_tool_loops joins the pending tool results in one user
//     turn (consecutive turns of one role are joined: OpenAI-compatible
//     servers may refuse them), and the stop is said in
//     CallResult.Limit instead of an empty reply.
//   - props.callAPI gets §7.1's clean-up (CleanAPIRequest): the deep tier's
//     model when none is given, nulls dropped, temperature dropped beside
//     thinking, and the current tools (CurrentTools, what a call sends now)
//     when the request has no tools key or a null one; an explicit empty
//     array is the caller's choice of no tools and is kept.
//   - The touchstone (the keystone) is embedded and persisted; a persisted
//     copy changed after the embedded one was released wins, an older one
//     is replaced (a kernel upgrade).
//   - Calls start with a small tool set (BootTools, the clean-build spec's
//     seven plus set_tools and the server tools, about 500 tokens); the
//     rest is one set_tools away. set_tools takes names or definitions (a
//     kernel tool re-described, a server tool with options, checked so the
//     API takes them) and always keeps itself. The set is persisted. Server
//     tools are sent only to the Anthropic provider. Browser tools with no
//     page attached answer an error saying so.
//   - Programmatic tool calling is on by default (§8.3): the read-only tools
//     carry allowed_callers whenever code_execution is active; NoPTC turns
//     it off.
//   - The API key is the environment's, else the one stored in the data
//     directory (0600) by the page or `hermitcrab key set`.
//   - web_request and fetch_url refuse every address that is not public
//     unless the host is allowed by name (privateIP: beyond Go's private
//     ranges, CGNAT 100.64/10, 0/8, reserved ranges and IPv4 carried in
//     IPv6), check each redirect and each dialled address, match patterns
//     however the host is spelled (CIDR networks too), refuse a pattern
//     that can match nothing at Open, and close each request's connections.
//   - The code-execution container id is kept in the store and sent on
//     every later call, so the sandbox's files persist across calls.
//   - The system prompt and the last tool carry cache_control, so repeated
//     calls bill cache reads.
//   - The network tools (passport_publish, passport_read, beach_mark,
//     beach_read, inbox_send, inbox_check, savepoint_save) are one set_tools
//     away, described at capabilities 0.8. A passport's offers and needs,
//     and a message's spindle, must be nodes of the instance's own blocks,
//     and carry their text. reply_to answers a message by the instance's
//     own number for it. Every message received is kept in the store,
//     which is the instance's replay memory. Restoring a save point is the
//     person's (the CLI), not the LLM's.
//   - Wake triggers (wake 0.4, 0.5; package trigger) fire once per due
//     time across processes, survive restarts, stop at daily caps (the
//     person's, lowered by the wake block), and run one wake at a time per
//     data directory on the conversation "wake"; lines the kernel cannot
//     read are reported in the next prompt. Every LLM request made under a
//     wake, its tools' included, is metered against the day's cost cap
//     (budget.go); unknown models count at the price table's highest
//     prices; an inbox trigger spends at most half of each cap; a wake
//     ends at a 30-minute deadline keeping its turns. See wake.go and
//     docs/hermitcrab-network.md.
package hermitcrab
