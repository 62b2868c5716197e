package llmtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// CheckRoundTrips checks that every response the server served came back
// byte for byte in the requests that followed it: for each answered
// request and each later request that sends its content back, the content
// must stand there whole, as one run of blocks inside one assistant turn,
// each block with the bytes the server wrote. Bytes are compared after
// compacting and escaping <, > and & as \u003c and so on, which Go's
// encoders (the SDK's among them) do to every string and which changes no
// JSON value.
//
// A later request "sends the content back" when one of its assistant turns
// holds a block of it that can be recognised: a tool_use or
// server_tool_use by its id, a server tool result by its tool_use_id, a
// thinking or redacted_thinking block by its bytes. Content that no later
// request holds (trimmed from a conversation, or the last answer) is not
// checked. This is a check for tests of the round-trip guarantee; the
// server itself refuses only what the API refuses.
func (s *Server) CheckRoundTrips() error {
	type answer struct {
		request int // index of the request it answered
		blocks  []json.RawMessage
	}
	var answers []answer
	counts := map[string]int{} // how many answers hold each recognisable block
	var problems []string
	got := s.Received()
	for n, r := range got {
		turns := assistantTurns(r.Body)
		for _, a := range answers {
			if msg := checkAnswerEcho(a.blocks, turns, counts); msg != "" {
				problems = append(problems, fmt.Sprintf("request %d: the answer to request %d %s", n+1, a.request+1, msg))
			}
		}
		if r.Status != 200 {
			continue
		}
		var resp struct {
			Content []json.RawMessage `json:"content"`
		}
		if json.Unmarshal(r.Response, &resp) != nil || len(resp.Content) == 0 {
			continue
		}
		a := answer{request: n}
		seen := map[string]bool{}
		for _, b := range resp.Content {
			a.blocks = append(a.blocks, normalize(b))
			if k := blockKey(b); k != "" && !seen[k] {
				seen[k] = true
				counts[k]++
			}
		}
		answers = append(answers, a)
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// checkAnswerEcho says how served came back changed in turns, or "".
func checkAnswerEcho(served []json.RawMessage, turns [][]json.RawMessage, counts map[string]int) string {
	for _, turn := range turns {
		if containsRun(turn, served) {
			return ""
		}
	}
	// Find the turn that holds a block only this answer had.
	for ti, turn := range turns {
		for _, b := range turn {
			k := blockKey(b)
			if k == "" || counts[k] != 1 || !holdsKey(served, k) {
				continue
			}
			var diffs []string
			for j, sb := range served {
				sk := blockKey(sb)
				for _, tb := range turn {
					if sk != "" && blockKey(tb) == sk && !bytes.Equal(normalize(tb), sb) {
						diffs = append(diffs, fmt.Sprintf("block %d came back as\n    %s\n  served as\n    %s", j, normalize(tb), sb))
					}
				}
			}
			if len(diffs) == 0 {
				diffs = append(diffs, fmt.Sprintf("blocks were dropped, added or reordered: served %s, the turn has %s", types(served), types(turn)))
			}
			return fmt.Sprintf("did not come back whole in assistant turn %d: %s", ti+1, strings.Join(diffs, "; "))
		}
	}
	return ""
}

// assistantTurns is the content blocks of each assistant message of a
// request body, normalized.
func assistantTurns(body []byte) [][]json.RawMessage {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return nil
	}
	var turns [][]json.RawMessage
	for _, m := range req.Messages {
		var blocks []json.RawMessage
		if m.Role != "assistant" || json.Unmarshal(m.Content, &blocks) != nil {
			continue // a user turn, or content given as a string
		}
		for i := range blocks {
			blocks[i] = normalize(blocks[i])
		}
		turns = append(turns, blocks)
	}
	return turns
}

// blockKey recognises a block across requests, or is "".
func blockKey(b json.RawMessage) string {
	var h struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		ToolUseID string `json:"tool_use_id"`
	}
	if json.Unmarshal(b, &h) != nil {
		return ""
	}
	switch {
	case h.Type == "thinking" || h.Type == "redacted_thinking":
		return "block " + string(normalize(b))
	case h.ID != "":
		return "id " + h.ID
	case h.ToolUseID != "" && h.Type != "tool_result":
		return h.Type + " " + h.ToolUseID
	}
	return ""
}

func holdsKey(blocks []json.RawMessage, k string) bool {
	for _, b := range blocks {
		if blockKey(b) == k {
			return true
		}
	}
	return false
}

// containsRun reports whether run appears in blocks as consecutive elements.
func containsRun(blocks, run []json.RawMessage) bool {
	for i := 0; i+len(run) <= len(blocks); i++ {
		match := true
		for j := range run {
			if !bytes.Equal(blocks[i+j], run[j]) {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// normalize compacts b and escapes <, >, & and U+2028/U+2029 the way Go's
// encoders do; neither changes the JSON value.
func normalize(b []byte) json.RawMessage {
	var compact, escaped bytes.Buffer
	if json.Compact(&compact, b) != nil {
		return b
	}
	json.HTMLEscape(&escaped, compact.Bytes())
	return escaped.Bytes()
}

func types(blocks []json.RawMessage) string {
	var names []string
	for _, b := range blocks {
		var h struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(b, &h)
		names = append(names, h.Type)
	}
	return "[" + strings.Join(names, " ") + "]"
}
