package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/hermitcrab"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/pscale"
)

// withTriggers writes trigger lines at wake 0.5.1… of a new data directory.
func withTriggers(t *testing.T, lines ...string) string {
	t.Helper()
	data := t.TempDir()
	k, err := hermitcrab.Open(data, hermitcrab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	ctx := context.Background()
	if err := k.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	for i, l := range lines {
		if _, err := k.Blocks().WriteAt(ctx, "wake", mustAddress(t, fmt.Sprintf("0.5.%d", i+1)), l); err != nil {
			t.Fatal(err)
		}
	}
	return data
}

// replyScript writes a script of n short replies and returns its path.
func replyScript(t *testing.T, n int) string {
	t.Helper()
	var entries []string
	for i := range n {
		entries = append(entries, fmt.Sprintf(`{"content":[{"type":"text","text":"reply %d"}]}`, i+1))
	}
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, []byte(`{"responses":[`+strings.Join(entries, ",")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// wakes reads the wakes recorded in a data directory.
func wakes(t *testing.T, data string) []store.Wake {
	t.Helper()
	k, err := hermitcrab.Open(data, hermitcrab.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	list, err := k.Wakes().List(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// post sends an authenticated webhook post and returns the status.
func postHook(t *testing.T, url, secret, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// `hermitcrab wake` runs one pass; status and hooks say what there is;
// an unreadable line is reported; the caps are flags.
func TestWakeFromTheCommandLine(t *testing.T) {
	data := withTriggers(t, "webhook ci tier 1: look at the build", "evry day")
	out, _ := mustHC(t, data, "", "--provider", "script", "--script", replyScript(t, 0), "wake")
	if !strings.Contains(out, "no trigger was due") || !strings.Contains(out, `problem: wake 0.5.2 "evry day": not a trigger`) {
		t.Fatalf("an idle pass: %s", out)
	}
	hooks, _ := mustHC(t, data, "", "wake", "hooks")
	m := regexp.MustCompile(`secret: ([0-9a-f]{64}) \((.*)\)`).FindStringSubmatch(hooks)
	if m == nil || !strings.Contains(hooks, "POST /hooks/ci") {
		t.Fatalf("wake hooks: %s", hooks)
	}
	if st, err := os.Stat(m[2]); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the secret's file: %v %v", st, err)
	}

	// A post waits in the store; the next pass wakes the instance once.
	k, err := hermitcrab.Open(data, hermitcrab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Wakes().Webhook(context.Background(), "ci", []byte(`{"build":1}`)); err != nil {
		t.Fatal(err)
	}
	k.Close()
	out, _ = mustHC(t, data, "", "--provider", "script", "--script", replyScript(t, 1), "wake", "--json")
	var r hermitcrab.WakeReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Wakes) != 1 || r.Wakes[0].Status != store.WakeDone || r.Wakes[0].Reply != "reply 1" {
		t.Fatalf("wake --json: %s %v", out, err)
	}
	status, _ := mustHC(t, data, "", "--max-wakes", "7", "wake", "status", "--json")
	var s hermitcrab.WakeStatus
	if err := json.Unmarshal([]byte(status), &s); err != nil || len(s.Triggers) != 1 || s.Caps.Wakes != 7 || s.Today.Wakes != 1 || len(s.Recent) != 1 || len(s.Problems) != 1 {
		t.Fatalf("wake status --json: %s %v", status, err)
	}
	if _, errOut, err := hc(t, data, "", "wake", "--mcp"); err == nil || !strings.Contains(errOut, "add --daemon") {
		t.Fatalf("--mcp without --daemon: %v %s", err, errOut)
	}

	// A wake skipped at the cap has every field of the shape too: reply
	// and finished are null, not missing.
	k, err = hermitcrab.Open(data, hermitcrab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Wakes().Webhook(context.Background(), "ci", []byte(`{"build":2}`)); err != nil {
		t.Fatal(err)
	}
	k.Close()
	out, _ = mustHC(t, data, "", "--provider", "script", "--script", replyScript(t, 1), "--max-wakes", "1", "wake")
	if !strings.Contains(out, "skipped") {
		t.Fatalf("a pass at the cap: %s", out)
	}
	status, _ = mustHC(t, data, "", "wake", "status", "--json")
	var raw struct {
		Recent []map[string]json.RawMessage `json:"recent"`
	}
	if err := json.Unmarshal([]byte(status), &raw); err != nil || len(raw.Recent) != 2 {
		t.Fatalf("wake status --json: %s %v", status, err)
	}
	for _, w := range raw.Recent {
		for _, field := range []string{"id", "trigger", "where", "due", "at", "day", "tier", "status", "reason", "reply", "cost_usd", "finished"} {
			if _, ok := w[field]; !ok {
				t.Fatalf("a %s wake lacks %q: %s", w["status"], field, status)
			}
		}
	}
	if skipped := raw.Recent[0]; string(skipped["status"]) != `"skipped"` || string(skipped["reply"]) != "null" || string(skipped["finished"]) != "null" {
		t.Fatalf("the skipped wake: %s", status)
	}
	// The text shows each wake's reason and reply.
	if text, _ := mustHC(t, data, "", "wake", "status"); !strings.Contains(text, "woke: a POST to /hooks/ci: 1 post(s) — reply 1") || !strings.Contains(text, "skipped: skipped: the daily cap of 1 wakes") {
		t.Fatalf("wake status: %s", text)
	}
}

// daemon starts `hermitcrab wake --daemon --addr` on data and returns its
// webhook base URL; it is interrupted (and must exit 0) when the test
// ends.
func daemon(t *testing.T, data, scriptPath string) string {
	t.Helper()
	cmd := exec.Command(binary, "--data", data, "--provider", "script", "--script", scriptPath, "wake", "--daemon", "--addr", "127.0.0.1:0", "--interval", "100ms")
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=", "HERMITCRAB_DATA=")
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopAtCleanup(t, cmd, "wake --daemon")
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if u := regexp.MustCompile(`webhooks at (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(lines.Text()); u != nil {
			go func() {
				for lines.Scan() { // keep reading, so the daemon never blocks on its output
				}
			}()
			return u[1]
		}
	}
	t.Fatal("the daemon printed no address")
	return ""
}

// Two daemons on one data directory: every post, whichever daemon takes
// it, wakes the instance once, and both stop cleanly on SIGTERM.
func TestTwoDaemonsOnOneDataDirectoryWakeOncePerPost(t *testing.T) {
	data := withTriggers(t, "webhook ci tier 1: look at the build")
	a := daemon(t, data, replyScript(t, 5))
	b := daemon(t, data, replyScript(t, 5))
	k, err := hermitcrab.Open(data, hermitcrab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	secret, err := k.Secrets().WebhookSecret()
	k.Close()
	if err != nil {
		t.Fatal(err)
	}
	for i, base := range []string{a, b, a, b} {
		if code := postHook(t, base+"/hooks/ci", secret, fmt.Sprintf(`{"post":%d}`, i)); code != http.StatusAccepted {
			t.Fatalf("post %d: HTTP %d", i, code)
		}
		deadline := time.Now().Add(time.Minute)
		for len(wakes(t, data)) < i+1 {
			if time.Now().After(deadline) {
				t.Fatalf("post %d woke nothing within a minute", i)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	time.Sleep(500 * time.Millisecond) // several more passes of both daemons
	list := wakes(t, data)
	if len(list) != 4 {
		t.Fatalf("%d wakes for 4 posts: %+v", len(list), list)
	}
	for _, w := range list {
		if w.Status != store.WakeDone || !strings.HasPrefix(w.Reply, "reply ") {
			t.Fatalf("a wake: %+v", w)
		}
	}
}

// `beach use` names the instance's beach in its data directory; --beach
// and $HERMITCRAB_BEACH win over it.
func TestBeachUseNamesTheInstancesBeach(t *testing.T) {
	data := t.TempDir()
	if out, _ := mustHC(t, data, "", "beach", "use"); strings.TrimSpace(out) != hermitcrab.DefaultBeach {
		t.Fatalf("the default: %q", out)
	}
	if es, _ := os.ReadDir(data); len(es) != 0 {
		t.Fatalf("asking for the beach wrote %d files", len(es))
	}
	mustHC(t, data, "", "beach", "use", "https://beach.example.org/")
	if out, _ := mustHC(t, data, "", "beach", "use"); strings.TrimSpace(out) != "https://beach.example.org" {
		t.Fatalf("after use: %q", out)
	}
	if out, _ := mustHC(t, data, "", "--beach", "http://127.0.0.1:9", "beach", "use"); strings.TrimSpace(out) != "http://127.0.0.1:9" {
		t.Fatalf("--beach: %q", out)
	}
	if _, errOut, err := hc(t, data, "", "beach", "use", "ftp://nowhere"); err == nil || !strings.Contains(errOut, "want http") {
		t.Fatalf("a bad URL: %v %s", err, errOut)
	}
}

// `hermitcrab serve` runs the wake triggers too: a webhook post to its
// address wakes the instance at once.
func TestServeRunsTheTriggers(t *testing.T) {
	data := withTriggers(t, "webhook ci tier 1: look at the build")
	cmd := exec.Command(binary, "--data", data, "--provider", "script", "--script", replyScript(t, 1), "serve", "--addr", "127.0.0.1:0", "--mcp")
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=", "HERMITCRAB_DATA=")
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopAtCleanup(t, cmd, "serve")
	lines := bufio.NewScanner(stdout)
	var base, printed string
	for base == "" && lines.Scan() {
		printed += lines.Text() + "\n"
		if m := regexp.MustCompile(`serving (http://127\.0\.0\.1:\d+)/`).FindStringSubmatch(lines.Text()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatalf("serve printed no URL: %s", printed)
	}
	if lines.Scan() && !strings.Contains(lines.Text(), "MCP endpoint over the blocks: "+base+"/mcp (bearer token in ") {
		t.Fatalf("serve --mcp did not say where its endpoint is: %q", lines.Text())
	}
	go func() {
		for lines.Scan() {
		}
	}()
	k, err := hermitcrab.Open(data, hermitcrab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	secret, _ := k.Secrets().WebhookSecret()
	token, _ := k.Secrets().MCPToken()
	k.Close()
	if strings.Contains(printed, token) {
		t.Fatal("serve printed the MCP token")
	}
	if code := postHook(t, base+"/hooks/ci", secret, `{"build":1}`); code != http.StatusAccepted {
		t.Fatalf("post: HTTP %d", code)
	}
	deadline := time.Now().Add(time.Minute)
	for len(wakes(t, data)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the post woke nothing within a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mustAddress is the address s, which the test writes well.
func mustAddress(t testing.TB, s string) pscale.Address {
	t.Helper()
	a, err := hermitcrab.ParseAddress(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
