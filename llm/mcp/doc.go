// Package mcp offers a person's MCP servers to a model as llm tools. Any
// kernel uses it the same way: a Registry file of Servers (what `mcp add`,
// `mcp list` and `mcp remove` change), a Set made from them, and at the
// start of each turn Set.Offer, whose Handlers go into an llm.Loop like
// the kernel's own tools. docs/llm.md ("MCP servers") says what users see.
//
// It stands on the official SDK (github.com/modelcontextprotocol/go-sdk)
// as a client, over streamable HTTP and stdio, and imports nothing of this
// module but llm.
//
// Choices made where the issue left room, each pinned by a test:
//
//   - A tool is offered as NAME__tool. A server's name has no "__" and no
//     trailing "_", so the first "__" ends it and two servers' tools never
//     share a name; names are unique whatever their case. Characters of a
//     tool's name the API refuses (MCP allows ".") are offered as "_", and
//     the call goes to the server under its own name. A name over 64
//     characters (OpenAI's limit; Anthropic's is 128) is left out.
//   - A schema is offered as the server sent it, or left out with a note
//     when the Anthropic API would refuse it (CheckSchema). Descriptions
//     are made inert and cut at 2,048 characters: they go out with every
//     request.
//   - Results: text is made inert and cleared of the server's secrets.
//     With Options.Images, an image the API would take (one of its four
//     types as read from its data, whatever type the server named; within
//     its 5 MB and 2,000 pixels a side, its limit in a request of many
//     images; within 10 MiB of images a result)
//     passes as an image block; any other image, and every image without
//     Options.Images (a kernel that reads results as text), is named in a
//     line, as is what the model never takes (audio, binary resources). Long text is not cut here: the Loop cuts
//     every tool result to its MaxResultChars with one note, and a second
//     rule here would say the same thing twice. What a server may send at
//     all is bounded at 16 MiB a message.
//   - Every failure of a call (the caller's deadline, the per-call
//     timeout, a server down, dead mid-call, answering garbage or an
//     error) is an is_error result saying what happened; the handler never
//     returns a Go error. A broken connection is made again at the next
//     call or offer (a stdio command is started again).
//   - notifications/tools/list_changed marks the server's list stale: a
//     call lists again before it runs (a vanished tool gives an error
//     result), and the next Offer lists again and notes the change once.
//     The tools of a turn in progress do not change under the model.
//   - A stdio command gets PATH, HOME, USER, LOGNAME, SHELL, TERM, TMPDIR,
//     TZ and the locale of the kernel's environment, and the Env given with
//     the server; nothing else (no API key of the kernel's). It runs in its
//     own process group, ended whole on close.
//   - Headers go to the URL's origin only: a redirect elsewhere does not
//     carry them.
//   - Inert text is internal/termtext's, and the registry is written with
//     internal/atomicfile, 0600 from the start: the package keeps the
//     file's promise itself rather than leave it to each kernel.
package mcp
