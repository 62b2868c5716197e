package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/llmtest"
	"github.com/llmkernels/kernels/llm/script"
)

// fakeAPI is the strict fake Anthropic API (llm/llmtest) serving scripted
// steps to the solve binary over HTTP. It outlives the processes it
// serves, so its record of served calls is what a provider would bill:
// tests compare the ledger with it. A front server can hold chosen
// requests (a call in flight when the process is killed).
type fakeAPI struct {
	api   *llmtest.Server
	front *httptest.Server

	mu    sync.Mutex
	delay time.Duration          // how long each answer takes (a model thinking)
	hold  func(body []byte) bool // requests to hold instead of serving
	held  chan struct{}          // closed when a request is held
	freed chan struct{}          // closed to let held requests go (unserved)
	nheld int
	// holding is how many held requests are still open (their client
	// has neither given up nor been released).
	holding int
	once    sync.Once
	copies  int
}

// newFakeAPI serves steps, each matchable copies times (a process killed
// after a call makes it again when resumed).
func newFakeAPI(t testing.TB, copies int, steps ...step) *fakeAPI {
	t.Helper()
	var rs []any
	for _, s := range steps {
		for range copies {
			rs = append(rs, scriptEntry(t, s))
		}
	}
	data, err := json.Marshal(map[string]any{"responses": rs})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := script.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeAPI{api: llmtest.NewServer(sc), held: make(chan struct{}), freed: make(chan struct{}), copies: copies}
	f.front = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.release()
		f.front.Close()
		f.api.Close()
	})
	return f
}

// scriptEntry is one scripted answer matched by operation, goal and attempt.
func scriptEntry(t testing.TB, s step) map[string]any {
	t.Helper()
	marker := "Operation: " + s.op
	if s.attempt > 0 {
		marker += fmt.Sprintf(" · attempt %d", s.attempt)
	}
	marker += "\nGoal: " + s.goal
	text, err := json.Marshal(s.answer)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{"match": map[string]any{"system_contains": "operation: " + s.op, "last_user_contains": marker},
		"response": map[string]any{"content": []any{map[string]any{"type": "text", "text": string(text)}}}}
}

// serve holds the requests f.hold picks (until release: they are never
// served) and passes the others to the fake API.
func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	delay := f.delay
	hold := f.hold != nil && f.hold(body)
	if hold {
		f.nheld++
		if f.nheld == 1 {
			close(f.held)
		}
	}
	f.mu.Unlock()
	if hold {
		f.mu.Lock()
		f.holding++
		f.mu.Unlock()
		select {
		case <-f.freed:
		case <-r.Context().Done():
		}
		f.mu.Lock()
		f.holding--
		f.mu.Unlock()
		http.Error(w, "held", http.StatusServiceUnavailable)
		return
	}
	select {
	case <-time.After(delay):
	case <-r.Context().Done():
		return // the client gave up (or was killed) before the answer: never served
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, f.api.URL+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// holdFirst holds the first request whose body contains marker (as
// JSON writes it: a newline is \n), and no other.
func (f *fakeAPI) holdFirst(marker string) {
	first := true
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = func(body []byte) bool { // called under f.mu
		if first && bytes.Contains(body, []byte(marker)) {
			first = false
			return true
		}
		return false
	}
}

// setHold sets which requests are held (nil: none), under the lock: the
// handler reads it from another goroutine, and the subprocess between them
// is no synchronisation the race detector sees.
func (f *fakeAPI) setHold(hold func(body []byte) bool) {
	f.mu.Lock()
	f.hold = hold
	f.mu.Unlock()
}

// setDelay makes every answer take d.
func (f *fakeAPI) setDelay(d time.Duration) {
	f.mu.Lock()
	f.delay = d
	f.mu.Unlock()
}

// release lets held requests go.
func (f *fakeAPI) release() { f.once.Do(func() { close(f.freed) }) }

// args are the provider flags that point the binary at the fake.
func (f *fakeAPI) args() []string {
	return []string{"--provider", "anthropic", "--base-url", f.front.URL}
}

// command is the binary on args in dir, with a test API key.
func (f *fakeAPI) command(dir string, args ...string) *exec.Cmd {
	cmd := solveCommand(dir, append(args, f.args()...)...)
	cmd.Env = append(cmd.Environ(), "ANTHROPIC_API_KEY=sk-ant-test-fake-0123456789")
	return cmd
}

// run runs the binary to its end.
func (f *fakeAPI) run(t testing.TB, dir string, args ...string) result {
	t.Helper()
	return finish(t, f.command(dir, args...))
}

// served is what the fake answered with 200 and a whole answer: the calls and what they cost
// at the built-in prices (the binary's, with no --prices file).
func (f *fakeAPI) served(t *testing.T) (int, float64) {
	t.Helper()
	calls, cost := 0, 0.0
	for _, r := range f.api.Received() {
		if r.Status != http.StatusOK || r.Request == nil || r.Response == nil {
			// A stream cut off before its end (the client was killed)
			// has no answer: the fake gives its entry back, unserved.
			continue
		}
		var resp llm.Response
		if err := json.Unmarshal(r.Response, &resp); err != nil {
			t.Fatal(err)
		}
		c, ok := llm.DefaultPriceTable().Cost(r.Request.Model, resp.Usage)
		if !ok {
			t.Fatalf("no price for %s", r.Request.Model)
		}
		calls++
		cost += c
	}
	return calls, cost
}

// requests are the bodies of the Messages requests the fake received
// whose last user text contains marker.
func (f *fakeAPI) requests(marker string) []string {
	var out []string
	for _, r := range f.api.Received() {
		if r.Request == nil {
			continue
		}
		if text := lastUserText(r.Request); strings.Contains(text, marker) {
			out = append(out, text)
		}
	}
	return out
}

func lastUserText(req *llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return req.Messages[i].Text()
		}
	}
	return ""
}

// background is a binary started and not waited for.
type background struct {
	t   *testing.T
	cmd *exec.Cmd
}

// runBackground starts the binary on args in dir; stop kills it.
func runBackground(t *testing.T, dir string, args ...string) *background {
	t.Helper()
	cmd := solveCommand(dir, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b := &background{t: t, cmd: cmd}
	t.Cleanup(b.stop)
	return b
}

// stop kills the process (and waits for it), once.
func (b *background) stop() {
	if b.cmd.ProcessState == nil {
		_ = b.cmd.Process.Kill()
		_ = b.cmd.Wait()
	}
}
