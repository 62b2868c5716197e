package llm

import "testing"

// The label every kernel puts on money metered on a scripted provider
// names the models it was priced at, each once, and says nothing was
// charged; a real client's money carries none.
func TestScriptedMoneyIsLabelledAsNotCharged(t *testing.T) {
	for _, c := range []struct {
		models []string
		want   string
	}{
		{[]string{"claude-sonnet-4-6"}, " (scripted: what claude-sonnet-4-6 would charge; nothing is charged)"},
		{[]string{"claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-4-6", ""}, " (scripted: what claude-opus-4-6 and claude-sonnet-4-6 would charge; nothing is charged)"},
		{nil, " (scripted: what the kernel's models would charge; nothing is charged)"},
	} {
		if got := (&Client{Scripted: true}).CostNote(c.models...); got != c.want {
			t.Errorf("CostNote(%q) = %q, want %q", c.models, got, c.want)
		}
	}
	var none *Client
	if got := (&Client{}).CostNote("claude-sonnet-4-6") + none.CostNote("x"); got != "" {
		t.Errorf("a real client's cost note = %q, want none", got)
	}
}
