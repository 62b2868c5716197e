package web

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"

	"github.com/llmkernels/kernels/llm"
)

// maxUsageCapture bounds how much of a passthrough answer is kept to read
// its usage from: an answer is a few hundred KB at most; a longer one is
// relayed whole and its usage read from what was kept (a stream's
// message_delta comes last, so it is then missed and the log says so).
const maxUsageCapture = 8 << 20

// capture keeps the first maxUsageCapture bytes written through it.
type capture struct{ buf bytes.Buffer }

func (c *capture) Write(p []byte) (int, error) {
	if room := maxUsageCapture - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// answerUsage reads the model and the usage of an Anthropic Messages
// answer as relayed: one JSON object, or an event stream whose
// message_start carries the model and the input's usage and whose
// message_delta carries the output's (and, from some API versions, the
// input's again). ok is false when no usage was found.
func answerUsage(body []byte, stream bool) (model string, u llm.Usage, ok bool) {
	type message struct {
		Model string     `json:"model"`
		Usage *llm.Usage `json:"usage"`
	}
	if !stream {
		var m message
		if json.Unmarshal(body, &m) != nil || m.Usage == nil {
			return "", llm.Usage{}, false
		}
		return m.Model, *m.Usage, true
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), maxUsageCapture)
	var start, delta bool
	for sc.Scan() {
		data, found := strings.CutPrefix(sc.Text(), "data:")
		if !found {
			continue
		}
		var ev struct {
			Type    string     `json:"type"`
			Message message    `json:"message"`
			Usage   *llm.Usage `json:"usage"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(data)), &ev) != nil {
			continue
		}
		switch {
		case ev.Type == "message_start" && ev.Message.Usage != nil:
			model, u, start = ev.Message.Model, *ev.Message.Usage, true
		case ev.Type == "message_delta" && ev.Usage != nil:
			d := *ev.Usage
			u.OutputTokens, delta = d.OutputTokens, true
			if d.InputTokens > 0 || d.CacheReadInputTokens > 0 || d.CacheCreationInputTokens > 0 {
				u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens = d.InputTokens, d.CacheReadInputTokens, d.CacheCreationInputTokens
			}
		}
	}
	return model, u, start && delta
}
