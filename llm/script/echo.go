package script

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/llmkernels/kernels/llm"
)

// echoes is what a Player remembers of the thinking it served, to hold
// later requests to the rules the API keeps for it while thinking is on
// (enabled or adaptive):
//
//   - a thinking block comes back with the text it was signed with: the
//     API checks the signature, and answers a changed text with a 400;
//   - the assistant turn being continued (answered with tool results, or
//     resumed after pause_turn) carries every thinking and
//     redacted_thinking block the API sent in it, unchanged and in order.
//
// Only what this Player served is checked, and only for the blocks it can
// recognise: a thinking block is known by its signature, a turn by the id
// of a tool_use or server_tool_use the Player sent in it. Blocks from
// elsewhere (a hand-written history, another server) are taken as they
// are, as is a redacted_thinking block whose data the Player never sent
// (it cannot tell a changed one from a foreign one), and so is everything
// when thinking is off. The structural rule of manual thinking (a
// continued turn starts with thinking) is llm.CheckRequest's.
type echoes struct {
	// signed maps a signature to the thinking texts served with it; a
	// script may reuse one signature, so any of them is accepted.
	signed map[string][]string
	// turns maps the id of each tool_use and server_tool_use block served
	// to the thinking and redacted_thinking blocks of the response that
	// carried it (one list per response, should a script reuse an id).
	turns map[string][][]llm.ContentBlock
}

// record remembers the thinking of a response about to be served.
func (e *echoes) record(resp *llm.Response) {
	var thinking []llm.ContentBlock
	for _, b := range resp.Content {
		switch b.Type {
		case llm.BlockThinking:
			if e.signed == nil {
				e.signed = map[string][]string{}
			}
			if !slices.Contains(e.signed[b.Signature], b.Thinking) {
				e.signed[b.Signature] = append(e.signed[b.Signature], b.Thinking)
			}
			thinking = append(thinking, llm.ContentBlock{Type: b.Type, Thinking: b.Thinking, Signature: b.Signature})
		case llm.BlockRedactedThinking:
			thinking = append(thinking, llm.ContentBlock{Type: b.Type, Data: b.Data})
		}
	}
	for _, b := range resp.Content {
		if id := useID(b); id != "" {
			if e.turns == nil {
				e.turns = map[string][][]llm.ContentBlock{}
			}
			e.turns[id] = append(e.turns[id], thinking)
		}
	}
}

// check returns the API's complaints about req's thinking blocks, or nil.
func (e *echoes) check(req *llm.Request) []string {
	if !req.Thinking.On() {
		return nil
	}
	var v []string
	for i, m := range req.Messages {
		if m.Role != llm.RoleAssistant {
			continue
		}
		for j, b := range m.Content {
			texts, ok := e.signed[b.Signature]
			if b.Type == llm.BlockThinking && ok && !slices.Contains(texts, b.Thinking) {
				v = append(v, fmt.Sprintf("messages.%d.content.%d: Invalid `signature` in `thinking` block (its text is not the text the API signed; send thinking blocks back unchanged)", i, j))
			}
		}
	}
	if i := continuedTurn(req.Messages); i >= 0 {
		if msg := e.checkTurn(req.Messages[i].Content); msg != "" {
			v = append(v, fmt.Sprintf("messages.%d: %s", i, msg))
		}
	}
	return v
}

// checkTurn says what is missing from a continued turn, or "".
func (e *echoes) checkTurn(turn []llm.ContentBlock) string {
	for _, b := range turn {
		served, ok := e.turns[useID(b)]
		if !ok {
			continue
		}
		if !slices.ContainsFunc(served, func(thinking []llm.ContentBlock) bool { return hasInOrder(turn, thinking) }) {
			return fmt.Sprintf("the thinking the API sent in this turn (%d thinking or redacted_thinking blocks, with %s %s) did not all come back unchanged and in order; with thinking on, a turn being continued must be sent back with every thinking and redacted_thinking block it had",
				len(served[len(served)-1]), b.Type, useID(b))
		}
	}
	return ""
}

// continuedTurn is the index of the assistant turn req continues: the last
// message when it is an assistant turn (after pause_turn), or the one before
// a last user message that answers it with tool results; -1 for none.
func continuedTurn(msgs []llm.Message) int {
	last := len(msgs) - 1
	switch {
	case last < 0:
		return -1
	case msgs[last].Role == llm.RoleAssistant:
		return last
	case last > 0 && msgs[last-1].Role == llm.RoleAssistant &&
		slices.ContainsFunc(msgs[last].Content, func(b llm.ContentBlock) bool { return b.Type == llm.BlockToolResult }):
		return last - 1
	}
	return -1
}

// hasInOrder reports whether every block of want appears in turn, unchanged
// and in the same order.
func hasInOrder(turn, want []llm.ContentBlock) bool {
	k := 0
	for _, b := range turn {
		if k < len(want) && b.Type == want[k].Type && b.Thinking == want[k].Thinking && b.Signature == want[k].Signature && b.Data == want[k].Data {
			k++
		}
	}
	return k == len(want)
}

// useID is the id of a tool_use or server_tool_use block, else "".
func useID(b llm.ContentBlock) string {
	switch b.Type {
	case llm.BlockToolUse:
		return b.ID
	case "server_tool_use":
		var head struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(b.Raw, &head) == nil {
			return head.ID
		}
	}
	return ""
}
