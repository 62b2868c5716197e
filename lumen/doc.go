// Package lumen is the Lumen kernel (specs/lumen-consciousness-architecture.md):
// a persistent agent kept in a directory, with its soul (data/soul.md),
// values (data/values.json), goals (data/goals/[year].json), memory
// (data/memory/, package memory) and skills (skills/*/main.py, package
// skill). Open an instance with Open; its methods do what the lumen
// commands do: Chat, Run, Explore, Reflect, Maintain, Status, Memories,
// Audit. Init scaffolds a new one.
//
// The kernel runs the loops and enforces the spec's write-permission table;
// the LLM gives judgment through one structured-output call per step, with
// every prompt a template the instance holds under prompts/<step>/.
//
// Where the spec is silent, or differs from the issue, the kernel chooses
// (each choice is pinned by a test):
//
//   - The kernel is Go; skills stay standalone programs run as
//     `python3 main.py` (Options.Python) with a JSON stdin/stdout protocol
//     (package skill). There is no sandbox.
//   - Concurrency: the spec allows lost updates; the issue asks that
//     nothing be lost. Memory lines are appended under a file lock;
//     values.json, goal files and soul.md are changed read-modify-write
//     under .lumen/state.lock and replaced atomically (write + rename).
//   - Memory lines carry the spec's five fields plus optional step, used,
//     decay and data: what the kernel needs to replay weights and audit
//     itself. A memory's id is its day file and byte offset.
//   - Weights are never rewritten in the files: the current weight lives in
//     the derived SQLite index (.lumen/index.db) and is replayed from the
//     log (a step's used list strengthens, a maintenance decay memory
//     decays). Relevance is FTS5 bm25, or embeddings when configured, times
//     the current weight.
//   - B=MAP: with no active values at all (a new instance) the value term
//     is 1.0, so a fresh agent can answer. A goal-driven candidate's goal
//     weight is the highest weight among the active goals it serves (0 with
//     none). P is 1 for a direct answer to the cycle's trigger and
//     IndirectPrompt (0.5) halved per week the served goal went unpursued
//     otherwise.
//   - On A = 0 for the most motivated candidate the kernel itself creates
//     the goal to author the skill (the spec's DECIDE rule), although the
//     table gives the action loop no goal existence: the LLM never gets that
//     write, the kernel's fixed rule does.
//   - The reflection trigger runs after every action loop (chat turns
//     included). After an explore cycle none of its conditions can have
//     changed (they count action cycles, deltas and goal changes), so run
//     does not check it there.
//   - The reflection trigger asks the LLM (TRIGGER step) only for value
//     tension and requests for self-examination, and only when one could
//     hold; the kernel checks its answer against the facts. The other
//     conditions are arithmetic over the kernel's records.
//   - Reflection reads self, goal and external memories only; the
//     prediction deltas and value conflicts it also needs are numbers the
//     kernel takes from its own records. The action and explore loops read
//     all memories (the chat history lives in their kernel records).
//   - EVOLVE calls the LLM to find contradictions only when there are two or
//     more proposals; contradictions on the same value, goal or soul.md are
//     found by the kernel anyway. The proposal whose REVIEW tension has the
//     higher strength is kept.
//   - Dates (memory files, goal years, --date) are UTC. Run continues the
//     action/explore alternation recorded in memory. Maintenance runs in
//     lumen run, after each cycle, when due. A tenth prompt,
//     prompts/create-skill/, drives the built-in create-skill tool.
//   - Ctrl-C (a cancelled context) lets the step under way finish, records
//     where the loop stopped, and ends the loop.
package lumen
