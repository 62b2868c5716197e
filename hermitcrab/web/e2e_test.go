package web

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/llmtest"
)

// The shell the scripted LLM builds at boot: a greeting and three buttons
// that exercise props.callLLM, a browser tool and props.recompile.
const bootShell = `function Shell(props) {
  const { useState } = React;
  const [reply, setReply] = useState('');
  const ask = async () => setReply(await props.callLLM([{ role: 'user', content: 'ping from the shell' }], { tier: 2 }));
  const notes = async () => setReply(await props.callLLM([{ role: 'user', content: 'please download my notes' }]));
  const breakIt = async () => {
    const r = await props.recompile("function Broken(props) { return <div>{props.missing.field}</div>; }");
    setReply(r.success ? 'rebuilt' : 'kept the old shell');
  };
  return (
    <div style={{ background: '#0a0a1a', color: '#e0e0ff', fontFamily: 'sans-serif', padding: 40, minHeight: '100vh' }}>
      <h1 id="greeting" style={{ color: '#67e8f9' }}>Hello. I woke up and built this face myself.</h1>
      <p>Everything here was written by the LLM at boot, through the recompile tool.</p>
      <button id="ask" onClick={ask}>Ask me something</button>{' '}
      <button id="notes" onClick={notes}>Download my notes</button>{' '}
      <button id="break" onClick={breakIt}>Try a broken shell</button>
      <p id="reply" style={{ marginTop: 24 }}>{reply}</p>
    </div>
  );
}`

func thinking(text string) map[string]any {
	return map[string]any{"type": "thinking", "thinking": text, "signature": "sig-" + text}
}

func textBlock(text string) map[string]any { return map[string]any{"type": "text", "text": text} }

func toolUseBlock(id, name string, input any) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
}

func entry(match map[string]string, content ...map[string]any) map[string]any {
	return map[string]any{"match": match, "response": map[string]any{"content": content}}
}

// testKey is the key the fake API accepts; any other is refused with 401.
const testKey = "sk-ant-test-key"

// browserSession runs a web server whose LLM is the strict fake Anthropic
// server (reached through the real SDK), and a headless Chromium on it.
type browserSession struct {
	fake *llmtest.Server
	srv  *Server
	url  string
	ctx  context.Context
}

// extra adds Chromium flags to the session's.
func newBrowserSession(t *testing.T, responses []map[string]any, extra ...chromedp.ExecAllocatorOption) *browserSession {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed; .ci/run installs Debian's chromium")
		}
		t.Skip("chromium is not installed (apt-get install chromium); CI runs this test")
	}
	data, _ := json.Marshal(map[string]any{"responses": append([]map[string]any{}, responses...)})
	srv, ts, fake := anthropicServer(t, string(data), kernel.Options{ServerTools: true})

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium), chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true), chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1000, 700)}, extra...)...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return &browserSession{fake: fake, srv: srv, url: ts.URL + "/", ctx: ctx}
}

func (b *browserSession) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func (b *browserSession) text(t *testing.T, id string) string {
	t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.ID(id)))
	if err != nil {
		t.Fatalf("reading #%s: %v", id, err)
	}
	return s
}

// waitText waits until #id shows want.
func (b *browserSession) waitText(t *testing.T, id, want string) {
	t.Helper()
	js := `(() => { const e = document.getElementById(` + jsString(id) + `); return !!e && e.textContent === ` + jsString(want) + `; })()`
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](js)); err != nil {
		t.Fatalf("waiting for #%s to show %q (it shows %q): %v", id, want, b.text(t, id), err)
	}
}

func jsString(s string) string {
	data, _ := json.Marshal(s)
	return string(data)
}

// lastUserText is the text of the last user message of a request the fake
// server received, tool results included.
func lastUserText(r llmtest.Received) string {
	msgs := r.Request.Messages
	var sb strings.Builder
	for _, b := range msgs[len(msgs)-1].Content {
		sb.WriteString(b.Text + b.Content.String())
	}
	return sb.String()
}

func TestWebShellKeyGateBootPropsBrowserToolRenderErrorAndReload(t *testing.T) {
	b := newBrowserSession(t, []map[string]any{
		entry(map[string]string{"last_user_contains": "BOOT"},
			thinking("First boot. Build a face."), textBlock("Building my interface."),
			toolUseBlock("toolu_boot", "recompile", map[string]string{"jsx": bootShell})),
		entry(map[string]string{"last_user_contains": "failed to render"},
			thinking("My shell broke."), textBlock("I see my new shell failed to render; the old one is still here.")),
		entry(map[string]string{"last_user_contains": "ping from the shell"},
			thinking("Answer."), textBlock("pong from the LLM")),
		entry(map[string]string{"last_user_contains": "please download my notes"},
			thinking("Use the download tool."), toolUseBlock("toolu_dl", "download", map[string]string{"filename": "notes.txt", "content": "basil by the tomatoes"})),
		entry(map[string]string{"tool_result_for": "download"},
			thinking("Done."), textBlock("I saved notes.txt for you.")),
	})
	ctx := context.Background()
	var tools []llm.Tool
	for _, name := range append(append([]string{}, conversation.BootTools()...), "download") {
		tools = append(tools, llm.Tool{Name: name})
	}
	if _, err := b.srv.Kernel().Conversation().SetTools(ctx, tools); err != nil {
		t.Fatal(err)
	}

	// The key gate: no key, so the form shows and nothing reaches the API.
	b.do(t, "key gate", chromedp.Navigate(b.url), chromedp.WaitVisible(chromedp.ID("hc-key")))
	if n := len(b.fake.Received()); n != 0 {
		t.Fatalf("the API was called %d times before a key was given", n)
	}
	// Submitting the key hides the form and boots: the LLM's JSX renders.
	b.do(t, "submit key and boot",
		chromedp.SendKeys(chromedp.ID("hc-key"), testKey), chromedp.Click(chromedp.ID("hc-key-submit")),
		chromedp.WaitVisible(chromedp.ID("greeting")), chromedp.WaitNotPresent(chromedp.ID("hc-key")))
	got := b.fake.Received()
	if len(got) != 1 || got[0].Header.Get("x-api-key") != "sk-ant-test-key" || got[0].Request.Model != "claude-opus-4-6" {
		t.Fatalf("boot: the fake API saw %d requests", len(got))
	}
	shot, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil || len(shot) < 1000 {
		t.Fatalf("screenshot: %d bytes, %v", len(shot), err)
	}
	if path := os.Getenv("HERMITCRAB_SCREENSHOT"); path != "" {
		os.WriteFile(path, shot, 0o644)
	}

	// A button in the LLM's shell calls props.callLLM; the reply appears.
	b.do(t, "ask", chromedp.Click(chromedp.ID("ask")))
	b.waitText(t, "reply", "pong from the LLM")

	// A browser tool: the LLM calls download, the page runs it and its
	// result returns to the tool loop.
	b.do(t, "download", chromedp.Click(chromedp.ID("notes")))
	b.waitText(t, "reply", "I saved notes.txt for you.")
	got = b.fake.Received()
	result := got[len(got)-1].Request.Messages
	last := result[len(result)-1].Content[0]
	if last.Type != llm.BlockToolResult || last.IsError || !strings.Contains(last.Content.String(), "notes.txt") {
		t.Fatalf("the page's download result did not return to the loop: %+v", last)
	}

	// A shell that throws while rendering keeps the old one on screen, is
	// reported to the server, and the LLM hears of it on its next call.
	b.do(t, "break", chromedp.Click(chromedp.ID("break")))
	b.waitText(t, "reply", "kept the old shell")
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](`window.hermitcrab.lastRender.status === 'failed'`)); err != nil {
		t.Fatalf("render failure not recorded in the page: %v", err)
	}
	// The server heard of it: only its status event says the previous
	// shell stays, and it repeats the page's error.
	heard := `(() => { const t = document.getElementById('hc-status').textContent;
		return t.includes('(the previous shell stays)') && t.includes("reading 'field'"); })()`
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](heard)); err != nil {
		t.Fatalf("the server did not hear of the failed render (the strip shows %q): %v", b.text(t, "hc-status"), err)
	}
	// The error is in a strip of its own above the shell, not over it, and
	// the person can dismiss it.
	covered := `(() => { const s = document.getElementById('hc-status').getBoundingClientRect();
		const g = document.getElementById('root').getBoundingClientRect();
		return s.height > 0 && getComputedStyle(document.getElementById('hc-status')).display !== 'none' && g.top >= s.bottom; })()`
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](covered)); err != nil {
		t.Fatalf("the error strip covers the shell or is not shown: %v", err)
	}
	b.do(t, "dismiss the strip", chromedp.Click(chromedp.ID("hc-dismiss")), chromedp.WaitNotVisible(chromedp.ID("hc-status")))
	b.do(t, "ask after the failure", chromedp.WaitVisible(chromedp.ID("greeting")), chromedp.Click(chromedp.ID("ask")))
	b.waitText(t, "reply", "I see my new shell failed to render; the old one is still here.")

	// Reloading restores the last good shell without calling the API.
	before := len(b.fake.Received())
	b.do(t, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("greeting")))
	time.Sleep(300 * time.Millisecond) // let any stray boot request arrive before counting
	if after := len(b.fake.Received()); after != before {
		t.Fatalf("reload made %d API calls", after-before)
	}
	if b.fake.Remaining() != 0 {
		t.Fatalf("%d scripted responses were never used", b.fake.Remaining())
	}
}

func TestWebShellCompileErrorGoesBackToTheLLMAndTheFixRenders(t *testing.T) {
	broken := "function Shell(props) {\n  return <div id=\"greeting\">Hello</span>;\n}"
	fixed := "function Shell(props) {\n  return <div id=\"greeting\" style={{color: '#e0e0ff'}}>Hello, second try.</div>;\n}"
	b := newBrowserSession(t, []map[string]any{
		entry(map[string]string{"last_user_contains": "BOOT"},
			thinking("Build."), toolUseBlock("toolu_1", "recompile", map[string]string{"jsx": broken})),
		entry(map[string]string{"tool_result_for": "recompile"},
			thinking("Fix the closing tag."), toolUseBlock("toolu_2", "recompile", map[string]string{"jsx": fixed})),
	})
	b.do(t, "key and boot",
		chromedp.Navigate(b.url), chromedp.WaitVisible(chromedp.ID("hc-key")),
		chromedp.SendKeys(chromedp.ID("hc-key"), testKey), chromedp.Click(chromedp.ID("hc-key-submit")))
	b.waitText(t, "greeting", "Hello, second try.")
	got := b.fake.Received()
	if len(got) != 2 {
		t.Fatalf("want 2 API calls (broken, then fixed), got %d", len(got))
	}
	feedback := got[1].Request.Messages[2].Content[0]
	if !feedback.IsError || !strings.Contains(feedback.Content.String(), "line 2, column") {
		t.Fatalf("the compile error did not reach the LLM with its line and column: %+v", feedback)
	}
}

func TestAWrongKeyAtBootAsksForAnotherAndTheNextBootWorks(t *testing.T) {
	b := newBrowserSession(t, []map[string]any{
		entry(map[string]string{"last_user_contains": "BOOT"},
			thinking("Build."), toolUseBlock("toolu_1", "recompile", map[string]string{"jsx": "function Shell(props) { return <h1 id=\"greeting\">Hello with the right key.</h1>; }"})),
	})
	b.do(t, "a wrong key",
		chromedp.Navigate(b.url), chromedp.WaitVisible(chromedp.ID("hc-key")),
		chromedp.SendKeys(chromedp.ID("hc-key"), "sk-ant-wrong"), chromedp.Click(chromedp.ID("hc-key-submit")))
	// The boot is refused (401): the page offers the key form again.
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](`(() => { const m = document.getElementById('hc-key-msg');
		return !!m && m.textContent.includes('refused') && !!document.getElementById('hc-key'); })()`)); err != nil {
		t.Fatalf("no key form after a 401 boot: %v", err)
	}
	if n := len(b.fake.Received()); n != 0 {
		t.Fatalf("the wrong key reached the API behind the key check %d times", n)
	}
	b.do(t, "the right key",
		chromedp.SendKeys(chromedp.ID("hc-key"), testKey), chromedp.Click(chromedp.ID("hc-key-submit")),
		chromedp.WaitVisible(chromedp.ID("greeting")))
	if got := b.fake.Received(); len(got) != 1 || got[0].Header.Get("x-api-key") != testKey {
		t.Fatalf("boot with the new key: %d requests", len(got))
	}
	// The "reset tools" control puts the boot tools back in place of a set
	// the LLM chose, and says so over the running shell.
	if _, err := b.srv.Kernel().Conversation().SetTools(context.Background(), []llm.Tool{{Name: "bsp"}}); err != nil {
		t.Fatal(err)
	}
	b.do(t, "reset the tools", chromedp.Click(chromedp.ID("hc-tools-reset")))
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](`document.getElementById('hc-lines').textContent.includes('the boot tools are back')`)); err != nil {
		t.Fatalf("no word of the reset on the page: %v", err)
	}
	if reset, err := b.srv.Kernel().Conversation().ResetTools(context.Background()); err != nil || reset {
		t.Fatalf("the chosen tools were still set after the page's reset (%v)", err)
	}
	// The key control replaces or removes the key: removing it shows the
	// form, and the server has no key.
	b.do(t, "remove the key", chromedp.Click(chromedp.ID("hc-key-button")), chromedp.WaitVisible(chromedp.ID("hc-key-remove")),
		chromedp.Click(chromedp.ID("hc-key-remove")))
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](`document.getElementById('hc-key-msg').textContent.includes('removed')`)); err != nil {
		t.Fatalf("removing the key: %v", err)
	}
	if b.srv.passKey() != "" {
		t.Fatal("the server still uses the removed key")
	}
}

func TestTheShellFormsTheLLMWritesRenderInTheBrowser(t *testing.T) {
	b := newBrowserSession(t, nil)
	b.do(t, "open the page", chromedp.Navigate(b.url), chromedp.WaitVisible(chromedp.ID("hc-key")))
	cases := []struct{ name, src, want string }{
		{"a bare return", "return function Shell(props) { return <p id=\"out\">{props.version}</p>; }", Version},
		{"a bare return beside an import", "import { useState } from 'react';\nreturn function Shell() {\n  const [n] = useState(2);\n  return <p id=\"out\">{n} {props.fastModel}</p>;\n}", "2 claude-haiku-4-5-20251001"},
		{"a bare return of a name", "function Shell() { return <p id=\"out\">named</p>; }\nreturn Shell;", "named"},
		{"no parameters and no export", "function App() { return <p id=\"out\">{props.model}</p> }", "claude-opus-4-6"},
		{"export default arrow with a fragment", "export default () => <><p id=\"out\">{typeof props.callLLM}</p></>;", "function"},
		{"imports of React, ReactDOM and a module the page lacks",
			"import * as R from 'react';\nimport { createPortal } from 'react-dom';\nimport PropTypes from 'prop-types';\nconst App = () => { const [s] = R.useState(typeof createPortal); return <p id=\"out\">{s} {typeof PropTypes}</p>; };\nexport { App as default };", "function object"},
		{"the source declares props itself", "const props = { who: 'its own' };\nexport default function App() { return <p id=\"out\">{props.who}</p> }", "its own"},
		{"CommonJS", "function App(p) { return <p id=\"out\">{p.version}</p> }\nmodule.exports = App;", Version},
		{"a class", "export default class Shell extends React.Component { render() { return <p id=\"out\">{this.props.model}</p>; } }", "claude-opus-4-6"},
	}
	for i, tc := range cases {
		code, err := compileShell(tc.src)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		js := fmt.Sprintf(`(() => { const r = window.hermitcrab.renderShell({id: %d, code: %s});
			const out = document.getElementById('out'); return r.status + ': ' + (out ? out.textContent : '(no #out)') + (r.error ? ' ' + r.error : ''); })()`, 1000+i, jsString(code))
		got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js))
		if err != nil || got != "rendered: "+tc.want {
			t.Errorf("%s: %q %v\n%s", tc.name, got, err, code)
		}
	}
}

// The page shows what woke the instance while the person was away: a wake
// a trigger fires while the page is open joins a panel at once, a page
// opened later lists the wakes not yet seen, and "Seen" clears them for
// good.
func TestThePageShowsWhatWokeTheInstanceWhileThePersonWasAway(t *testing.T) {
	b := newBrowserSession(t, []map[string]any{
		entry(map[string]string{"last_user_contains": "BOOT"},
			thinking("Build."), toolUseBlock("toolu_1", "recompile", map[string]string{"jsx": "function Shell(props) { return <h1 id=\"greeting\">Hello.</h1>; }"})),
		entry(map[string]string{"last_user_contains": "[wake]"}, textBlock("The build failed; I wrote a note in stash for you.")),
		entry(map[string]string{"last_user_contains": "[wake]"}, textBlock("It failed again.")),
	})
	ctx := context.Background()
	k := b.srv.Kernel()
	if _, err := k.Blocks().WriteAt(ctx, "wake", kerneltest.At(t, "0.5.1"), "webhook ci tier 1: look at the build"); err != nil {
		t.Fatal(err)
	}
	b.do(t, "key and boot", chromedp.Navigate(b.url), chromedp.WaitVisible(chromedp.ID("hc-key")),
		chromedp.SendKeys(chromedp.ID("hc-key"), testKey), chromedp.Click(chromedp.ID("hc-key-submit")),
		chromedp.WaitVisible(chromedp.ID("greeting")))
	if _, err := k.Wakes().Webhook(ctx, "ci", []byte(`{"build":7,"status":"failed"}`)); err != nil {
		t.Fatal(err)
	}
	r, err := k.Wakes().RunTriggers(ctx)
	if err != nil || len(r.Wakes) != 1 || r.Wakes[0].Status != store.WakeDone {
		t.Fatalf("the wake: %+v %v", r, err)
	}
	shows := `(() => { const p = document.getElementById('hc-away'); return !!p && p.textContent.includes('wake 0.5.1') &&
		p.textContent.includes('woke') && p.textContent.includes('I wrote a note in stash for you'); })()`
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](shows)); err != nil {
		t.Fatalf("the open page did not show the wake: %v", err)
	}
	// A real wake's cost is shown as it is; once a scripted provider
	// answers, that wake's cost is starred and the star explained once.
	if real, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.getElementById('hc-away').textContent`)); err != nil || strings.Contains(real, "*") || strings.Contains(real, "scripted") {
		t.Fatalf("a real wake labelled scripted: %q %v", real, err)
	}
	scripted := *k.Conversation().Client()
	scripted.Scripted = true
	k.Conversation().SetClient(&scripted)
	if _, err := k.Wakes().Webhook(ctx, "ci", []byte(`{"build":8,"status":"failed"}`)); err != nil {
		t.Fatal(err)
	}
	if r, err := k.Wakes().RunTriggers(ctx); err != nil || len(r.Wakes) != 1 || r.Wakes[0].Status != store.WakeDone || r.Wakes[0].ScriptedUSD <= 0 {
		t.Fatalf("the scripted wake: %+v %v", r, err)
	}
	labelled := `(() => { const p = document.getElementById('hc-away'); return !!p && p.querySelectorAll('.hc-away-wake').length === 2 &&
		(p.textContent.match(/\*/g) || []).length === 2 &&
		p.textContent.split("scripted: what the kernel's models would charge; nothing is charged").length === 2; })()`
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](labelled)); err != nil {
		t.Fatalf("the scripted wake's cost is not labelled once: %v", err)
	}
	b.do(t, "a later visit", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("greeting")))
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](shows)); err != nil {
		t.Fatalf("a page opened later did not list the wake: %v", err)
	}
	b.do(t, "seen", chromedp.Click(chromedp.ID("hc-away-seen")), chromedp.WaitNotPresent(chromedp.ID("hc-away")))
	b.do(t, "the visit after", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("greeting")))
	time.Sleep(300 * time.Millisecond) // let the page's wake list arrive
	if gone, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`!document.getElementById('hc-away')`)); err != nil || !gone {
		t.Fatalf("wakes marked seen are listed again: %v", err)
	}
}

// A shell that passes callLLM an onText shows the answer as it arrives:
// the answer here stalls after its first pieces and never completes, so
// what shows was shown before it completed; the strip says it is
// arriving, and callLLM has not returned.
func TestWebShellShowsPartialTextBeforeTheAnswerCompletes(t *testing.T) {
	shell := `function Shell(props) {
  const { useState } = React;
  const [partial, setPartial] = useState('');
  const [reply, setReply] = useState('');
  const ask = async () => setReply(await props.callLLM('stream me a story', { onText: setPartial }));
  return <div><button id="ask" onClick={ask}>ask</button><p id="partial">{partial}</p><p id="reply">{reply}</p></div>;
}`
	b := newBrowserSession(t, []map[string]any{
		entry(map[string]string{"last_user_contains": "BOOT"},
			thinking("Build."), toolUseBlock("toolu_1", "recompile", map[string]string{"jsx": shell})),
		entry(map[string]string{"last_user_contains": "stream me"},
			thinking("A story."), textBlock("First words arrive early, then the rest of a long story follows, piece by piece.")),
	})
	b.do(t, "key and boot",
		chromedp.Navigate(b.url), chromedp.WaitVisible(chromedp.ID("hc-key")),
		chromedp.SendKeys(chromedp.ID("hc-key"), testKey), chromedp.Click(chromedp.ID("hc-key-submit")),
		chromedp.WaitVisible(chromedp.ID("ask")))
	// message_start, the thinking block (start, pieces, signature, stop),
	// the text block's start and its first pieces; then the stream stalls.
	b.fake.BreakStream(llmtest.StreamFault{After: 10, Stall: time.Minute})
	b.do(t, "ask", chromedp.Click(chromedp.ID("ask")))
	arrived := `(() => { const p = document.getElementById('partial').textContent;
		return p.startsWith('First words') && p.length < 80 && document.getElementById('reply').textContent === ''
			&& document.getElementById('hc-progress').textContent.startsWith('receiving the answer'); })()`
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](arrived)); err != nil {
		t.Fatalf("no partial text before the answer completed: #partial %q, strip %q: %v", b.text(t, "partial"), b.text(t, "hc-progress"), err)
	}
}
