package anthropic_test

import (
	"strings"
	"testing"

	"github.com/llmkernels/kernels/llm"
)

func TestScratchOddJSON(t *testing.T) {
	odd := `{"caller":{"type":"direct"},"input":{"key":"a","n":123456789012345678901234567890,"f":1.0e+2,"u":"\u00e9\u2028 é😀","esc":"a\/b<&>"},"zzz":{"b":1,"a":[]},"name":"lookup","id":"toolu_1","type":"tool_use"}`
	th := `{"type":"thinking","thinking":"line\u2028sep \"q\" \\ ","signature":"s\/1"}`
	res, srv := runLoop(t, `{"responses":[{"content":[`+th+`,`+odd+`]},{"content":[{"type":"text","text":"ok"}]}]}`,
		&llm.Request{Model: model, MaxTokens: 4096, Thinking: &llm.Thinking{Type: "adaptive"}, Messages: []llm.Message{llm.UserText("x")}})
	_ = res
	body := string(srv.Received()[1].Body)
	served := string(srv.Received()[0].Response)
	t.Logf("served: %s", served)
	i := strings.Index(body, `"messages"`)
	t.Logf("sent back: %s", body[i:])
}
