package web

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/llm"
)

// With no key the page says where a key comes from, what a boot costs
// (from the price table) and the other providers; it offers no "Remove
// key" when there is none; "Close" leaves a way back to the form, never
// a blank page; and the key given after that boots.
func TestWithNoKeyThePageExplainsTheKeyAndCloseLeadsBack(t *testing.T) {
	b := newBrowserSession(t, []map[string]any{
		entry(map[string]string{"last_user_contains": "BOOT"},
			thinking("Build."), toolUseBlock("toolu_1", "recompile", map[string]string{"jsx": "function Shell(props) { return <h1 id=\"greeting\">Hello.</h1>; }"})),
	})
	b.do(t, "the key form", chromedp.Navigate(b.url), chromedp.WaitVisible(chromedp.ID("hc-key")))
	form, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('form.hc-panel').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"console.anthropic.com", "--provider openai", "--base-url http://localhost:11434/v1", "hermitcrab serve --demo"} {
		if !strings.Contains(form, want) {
			t.Errorf("the key form does not say %q:\n%s", want, form)
		}
	}
	href, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('form.hc-panel a').href`))
	if err != nil || href != "https://console.anthropic.com/settings/keys" {
		t.Errorf("the key link: %q %v", href, err)
	}
	// The boot's cost is the price table's, for the deep tier's model and
	// the prompt's size.
	ctx := t.Context()
	deep, _ := b.srv.Kernel().Conversation().TierParams(ctx, prompt.Deep)
	p, err := b.srv.Kernel().Conversation().Prompt(ctx, prompt.Deep)
	if err != nil {
		t.Fatal(err)
	}
	usd, ok := llm.DefaultPriceTable().Cost(deep.Model, llm.Usage{InputTokens: bootCalls * p.Tokens, OutputTokens: bootOutputTokens})
	if !ok || usd <= 0 {
		t.Fatalf("no price for %s", deep.Model)
	}
	cost, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.ID("hc-boot-cost")))
	if want := fmt.Sprintf("about $%.2f", usd); err != nil || !strings.Contains(cost, want) || !strings.Contains(cost, deep.Model) {
		t.Errorf("the boot's cost: %q %v, want %q and %s", cost, err, want, deep.Model)
	}
	if n, _ := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll('#hc-key-remove').length`)); n != 0 {
		t.Error(`"Remove key" is offered with no key`)
	}

	b.do(t, "close the form", chromedp.Click(chromedp.ID("hc-key-close")), chromedp.WaitVisible(chromedp.ID("hc-no-key")))
	if n, _ := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll('#hc-key').length`)); n != 0 {
		t.Error("the key form is still there after Close")
	}
	b.do(t, "back to the form", chromedp.Click(chromedp.ID("hc-key-open")), chromedp.WaitVisible(chromedp.ID("hc-key")),
		chromedp.SendKeys(chromedp.ID("hc-key"), testKey), chromedp.Click(chromedp.ID("hc-key-submit")),
		chromedp.WaitVisible(chromedp.ID("greeting")))
	if n := len(b.fake.Received()); n != 1 {
		t.Fatalf("the boot after the way back: %d requests", n)
	}
	// Now a stored key is in use: the key control offers to remove it.
	b.do(t, "the key control", chromedp.Click(chromedp.ID("hc-key-button")), chromedp.WaitVisible(chromedp.ID("hc-key-remove")))
}
