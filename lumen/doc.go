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
// every prompt a template the instance holds under prompts/<step>/; the
// JSON instruction and re-ask (prompts/json/), skill outcomes
// (prompts/act/) and the items of listed variables (prompts/parts/) are
// templates too (docs/lumen.md lists which file holds which text).
//
// Where the spec is silent, or differs from the issue, the kernel chooses
// (each choice is pinned by a test):
//
//   - The kernel is Go; skills stay standalone programs run as
//     `python3 main.py` (Options.Python) with a JSON stdin/stdout protocol
//     (package skill). The spec runs them without sandboxing; lumen runs
//     them confined (internal/proc: Landlock, no network unless allowed,
//     resource limits), or not at all where confinement is not available,
//     unless the person passes --unconfined.
//   - Concurrency: the spec allows lost updates; the issue asks that
//     nothing be lost. Memory lines are appended under a file lock;
//     values.json, goal files and soul.md are changed read-modify-write
//     under .lumen/state.lock and replaced atomically (write + rename).
//   - Memory lines carry the spec's five fields plus a ULID id and optional
//     step, used, judged, decay, model, usage and data: what the kernel
//     needs to replay weights, account for spend and audit itself.
//     References name ids, so editing a day file moves no reference. Lines
//     written before ids existed get an id derived from their day, text
//     and rank among identical lines; their old byte-offset references are
//     pinned to those ids by one migrate memory per day file, written the
//     first time the instance is opened for writing.
//   - Weights are never rewritten in the files: the current weight lives in
//     the derived SQLite index (.lumen/index.db) and is replayed from the
//     log in one pass (a step's used list strengthens, a maintenance decay
//     memory decays; passes compose). The index records each day file's
//     size, modification time, inode change time, inode and hash, and
//     rebuilds when a file changed other than by appending (lines appended
//     to a day before the last indexed one, after a clock was set back,
//     count as appending).
//   - Retrieval scores like Generative Agents: recency (0.995 per hour
//     since last access), importance (judged by the model when the memory
//     is written, plus use) and relevance (bm25, or cosine with
//     embeddings), each min-max normalised over the candidates, weighted
//     0.5, 2 and 3. The spec's use and decay keep the current weight; the
//     sum, unlike a product, lets a decayed memory that matches come back.
//     The recent window holds self, goal and external memories only, and
//     chat gives THINK the conversation itself, apart from retrieval.
//   - B=MAP: with no active values at all (a new instance) the value term
//     is 1.0, so a fresh agent can answer. A goal-driven candidate's goal
//     weight is the highest weight among the active goals it serves (0 with
//     none). A is 1 only for a skill whose current version's --help passed
//     (cached per version, failures too). P is 1 for a direct answer to the
//     cycle's trigger and IndirectPrompt (0.5) halved per week since the
//     served goal's own last pursuit otherwise.
//   - On A = 0 for the most motivated candidate the kernel itself creates
//     the goal to author the skill (the spec's DECIDE rule), although the
//     table gives the action loop no goal existence: the LLM never gets that
//     write, the kernel's fixed rule does. When a person is waiting (chat),
//     the best candidate that can act still answers them, or the chat skill
//     says the skill is missing (prompts/decide/gap-reply.md).
//   - The action loop's "create skill" may also revise a skill: a new
//     version whose --help must pass, the old one kept under
//     skills/.history/ and restorable. THINK and EXPLORE see the whole
//     --help of chat and of the skills most relevant to the step (at most
//     SkillsInFull), the others by name.
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
//     prompts/create-skill/, drives the built-in create-skill tool; three
//     more, prompts/judge-*, are the audit's model-as-judge questions.
//   - "Runs continuously until stopped": a failed cycle is a kernel memory
//     and the loop goes on after a back-off that doubles while failures
//     repeat; it stops on a cancelled context (Ctrl-C, SIGTERM), a cycle
//     count, a time limit, or a spend cap per run or per UTC day (the day's
//     spend is summed from the usage each memory line records, so it holds
//     across processes and restarts). The loop timer defaults to 5 minutes
//     in the CLI. The caps count every answer as it arrives (repairs and
//     create-skill turns included), so one call at most passes them; a run
//     with a cap refuses, before any call, a model or fallback the price
//     table does not price (its calls would count as $0).
//   - The index is derived: one SQLite finds damaged is rebuilt from the
//     files by the read that finds it (in memory for a read-only view). An
//     embedding endpoint gets 30 s per request and, after a failure, 5
//     minutes of full-text retrieval before it is tried again.
//   - A skill's --help result is kept per version; files a skill writes in
//     its own directory while it runs make a new version that keeps it,
//     unless main.py changed. A directory under skills/ whose name no
//     skill may have is listed as not usable, saying why.
//   - Ctrl-C (a cancelled context) lets the step under way finish, records
//     where the loop stopped, and ends the loop.
//   - Every instruction and every sentence the LLM reads about an empty
//     value is in the templates ({{name|text}}); the JSON Schemas carry
//     structure only. Go renders data (lists of values, goals, memories,
//     candidates) in a fixed plain format. Templates an instance still
//     holds unedited from an earlier kernel are upgraded on open.
//   - Every item of a list the model reads is one line (or the fixed
//     lines of its part): a value with a line break is folded onto it, and
//     the values the kernel always quoted (a delta's action, prediction and
//     outcome, a goal in the trigger) are Go-quoted, escapes and all. The
//     person's message in {{trigger}} is passed as written.
//   - A loop loads and checks every template it may fill in (the later
//     steps' prompts, prompts/act/, prompts/create-skill/, prompts/parts/)
//     before its first call: a broken one fails the loop before anything
//     is paid for, even when this cycle would not reach it. A blank
//     system.md, prompt.md or prompts/json/ template fails the step too
//     (the API refuses an empty block); deleting the file, not blanking
//     it, is how to get the default back.
package lumen
