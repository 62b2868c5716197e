package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// serve --demo, as a newcomer runs it: no key anywhere, the binary serves a
// scripted instance; in headless Chromium the page says it is a demo (a
// banner in the kernel's strip, above the shell, not covering it), the
// instance boots and builds its face, and the face answers chat, one
// answer through a tool that really writes the stash block.
func TestServeDemoBootsBuildsAFaceAndAnswersInTheBrowser(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed; .ci/run installs Debian's chromium")
		}
		t.Skip("chromium is not installed (apt-get install chromium); CI runs this test")
	}
	data := t.TempDir()
	cmd := exec.Command(binary, "--data", data, "serve", "--demo", "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=", "HERMITCRAB_DATA=", "LLMKERNELS_PROVIDER=anthropic")
	stdout := startReading(t, cmd, "serve --demo")
	var said strings.Builder
	url := ""
	for r := bufio.NewReader(stdout); url == ""; {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("serve --demo printed no URL: %v\n%s", err, said.String())
		}
		said.WriteString(line)
		url = regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(line)
	}
	for _, want := range []string{"this is a demo", "A scripted model plays the LLM", "nothing is charged", "(data: " + data + ")"} {
		if !strings.Contains(said.String(), want) {
			t.Errorf("serve --demo did not say %q:\n%s", want, said.String())
		}
	}

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("no-first-run", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1000, 700))
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	lastCrab := `(() => { const m = document.querySelectorAll('.msg-crab'); return m.length ? m[m.length - 1].textContent : ''; })()`
	waitReply := func(n int, want string) {
		t.Helper()
		js := `document.querySelectorAll('.msg-crab').length === ` + strconv.Itoa(n) + ` && ` + lastCrab + `.includes(` + jsQuote(want) + `)`
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js)); err != nil {
			got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](lastCrab))
			t.Fatalf("waiting for reply %d with %q (the last is %q): %v", n, want, got, err)
		}
	}

	do("open the page: the face is built", chromedp.Navigate(url), chromedp.WaitVisible(chromedp.ID("greeting")))
	banner, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("hc-demo")))
	if err != nil || !strings.Contains(banner, "Demo: a scripted model plays the LLM") || !strings.Contains(banner, "nothing is charged") {
		t.Fatalf("the demo banner: %q %v", banner, err)
	}
	above := `(() => { const b = document.getElementById('hc-demo').getBoundingClientRect();
		const r = document.getElementById('root').getBoundingClientRect(); return b.height > 0 && r.top >= b.bottom; })()`
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](above)); err != nil {
		t.Fatalf("the demo banner covers the shell or is hidden: %v", err)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#hc-key, #hc-key-button').length`)); n != 0 {
		t.Fatal("the demo asks for a key, or offers the key control")
	}

	do("say hello", chromedp.SendKeys(chromedp.ID("chat-input"), "hello"), chromedp.Click(chromedp.ID("chat-send")))
	waitReply(2, "I am the demo's scripted model")
	do("ask it to remember", chromedp.SendKeys(chromedp.ID("chat-input"), "remember that I like short answers"), chromedp.Click(chromedp.ID("chat-send")))
	waitReply(3, "Noted in my stash block")

	// The tool call was real: the stash block holds the note.
	out, _ := mustHC(t, data, "", "blocks", "show", "stash", "0.1")
	if !strings.Contains(out, "The person likes short answers.") {
		t.Errorf("stash 0.1 after the demo's block_write:\n%s", out)
	}
	// Five more answers, the last saying so; then the script is exhausted,
	// which the face shows.
	for i := 4; i <= 8; i++ {
		do("say more", chromedp.SendKeys(chromedp.ID("chat-input"), "more"), chromedp.Click(chromedp.ID("chat-send")))
		if i < 8 {
			waitReply(i, "")
		}
	}
	waitReply(8, "That was my last canned answer")
	do("one more", chromedp.SendKeys(chromedp.ID("chat-input"), "and now?"), chromedp.Click(chromedp.ID("chat-send")))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`[...document.querySelectorAll('.msg-kernel')].some(m => m.textContent.includes('no entry answers the request'))`)); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('chat-log').textContent`))
		t.Errorf("no word of the used-up script on the face: %v\n%s", err, got)
	}

	// --demo sets the provider itself.
	if _, errOut, err := hc(t, t.TempDir(), "", "serve", "--demo", "--provider", "openai"); err == nil || !strings.Contains(errOut, "drop --provider") {
		t.Errorf("serve --demo --provider openai: %v %s", err, errOut)
	}
	if h, _ := mustHC(t, t.TempDir(), "", "serve", "--help"); !strings.Contains(h, "--demo") {
		t.Errorf("serve --help does not show --demo:\n%s", h)
	}
}

func jsQuote(s string) string {
	data, _ := json.Marshal(s)
	return string(data)
}

// serve --demo makes no network call, even on a data directory whose
// person added MCP servers (serve --demo --data on their own instance):
// the servers are neither asked for their tools nor offered, so set_tools
// refuses their tools and a call contacts none of them.
func TestServeDemoContactsNoMCPServer(t *testing.T) {
	var hits atomic.Int32
	mcpServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer mcpServer.Close()
	data := t.TempDir()
	servers := `{"servers": [{"name": "docs", "url": "` + mcpServer.URL + `/mcp"}]}`
	if err := os.WriteFile(filepath.Join(data, "mcp_servers.json"), []byte(servers), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "api_key"), []byte("sk-ant-own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "--data", data, "serve", "--demo", "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=", "HERMITCRAB_DATA=")
	url := ""
	for r := bufio.NewReader(startReading(t, cmd, "serve --demo")); url == ""; {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("serve --demo printed no URL: %v", err)
		}
		url = regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(line)
	}
	post := func(path, body string) (int, string) {
		t.Helper()
		resp, err := http.Get(url + "api/state")
		if err != nil {
			t.Fatal(err)
		}
		var st struct{ CSRF string }
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", url+path, strings.NewReader(body))
		req.Header.Set("X-CSRF-Token", st.CSRF)
		req.Header.Set("Origin", strings.TrimSuffix(url, "/"))
		req.Header.Set("Content-Type", "application/json")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := post("api/tools", `{"tools": ["block_read", "block_write", "recompile", "docs__search"]}`)
	if status == http.StatusOK {
		t.Errorf("set_tools took a tool of an MCP server in the demo: %s", body)
	}
	if status, body := post("api/call", `{"messages": [{"role": "user", "content": "hello"}], "tier": 2}`); status != http.StatusOK {
		t.Fatalf("a call: %d %s", status, body)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the demo contacted the MCP server %d times", n)
	}
	// The demo takes no key: the instance's own stays as it was.
	if status, body := post("api/key", `{"key": "sk-ant-demo-overwrite"}`); status != http.StatusForbidden || !strings.Contains(body, "the demo does not take keys") || !strings.Contains(body, "start hermitcrab without the demo to use your key") {
		t.Errorf("POST /api/key in the demo: %d %s", status, body)
	}
	if key, err := os.ReadFile(filepath.Join(data, "api_key")); string(key) != "sk-ant-own\n" {
		t.Errorf("the instance's key after the demo: %q %v", key, err)
	}
}

// serve --demo that fails before it serves (here a --prices file that
// does not exist) leaves no temporary directory behind.
func TestServeDemoFailingEarlyLeavesNoTemporaryDirectory(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command(binary, "serve", "--demo", "--addr", "127.0.0.1:0", "--prices", filepath.Join(tmp, "no-such-prices.json"))
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=", "HERMITCRAB_DATA=", "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("serve --demo with a missing --prices file served:\n%s", out)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "hermitcrab-demo-*")); len(left) != 0 {
		t.Errorf("left behind %v\n%s", left, out)
	}
}
