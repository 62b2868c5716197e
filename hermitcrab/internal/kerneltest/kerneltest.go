// Package kerneltest is what the hermitcrab kernel's tests share: kernels
// in temporary directories whose LLM answers from a script, a clock moved
// by hand, a beach on loopback, and the scripts' building blocks. Only
// tests import it.
package kerneltest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/beach/server"
	bstore "github.com/llmkernels/kernels/hermitcrab/beach/store"
	"github.com/llmkernels/kernels/hermitcrab/blocks"
	"github.com/llmkernels/kernels/hermitcrab/identity"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/internal/pgtest"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/anthropic"
	"github.com/llmkernels/kernels/llm/llmtest"
	"github.com/llmkernels/kernels/llm/script"
	"github.com/llmkernels/kernels/pscale"
)

// New opens a kernel in a temporary directory whose LLM answers from the
// script; the scripted provider is strict, so every request the kernel
// makes must keep the API's rules.
func New(t *testing.T, scriptJSON string, opts ...func(*kernel.Options)) (*kernel.Kernel, *script.Provider) {
	t.Helper()
	p := Scripted(t, scriptJSON)
	o := kernel.Options{Client: &llm.Client{Provider: p}, ServerTools: true}
	for _, f := range opts {
		f(&o)
	}
	return Open(t, o), p
}

// Scripted is the strict scripted provider playing js.
func Scripted(t testing.TB, js string) *script.Provider {
	t.Helper()
	s, err := script.Parse([]byte(js))
	if err != nil {
		t.Fatalf("script: %v", err)
	}
	return script.New(s)
}

// Open opens a ready kernel in a temporary directory, closed when the
// test ends.
func Open(t *testing.T, o kernel.Options) *kernel.Kernel {
	t.Helper()
	return OpenIn(t, t.TempDir(), o)
}

// OpenIn opens a ready kernel in dir, closed when the test ends.
func OpenIn(t testing.TB, dir string, o kernel.Options) *kernel.Kernel {
	t.Helper()
	k, err := kernel.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := k.Close(); err != nil {
			t.Errorf("closing the kernel: %v", err)
		}
	})
	if err := k.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	return k
}

// At is the address s, which the test writes well.
func At(t testing.TB, s string) pscale.Address {
	t.Helper()
	a, err := blocks.ParseAddress("path", s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Text is the text of the node at path of a block.
func Text(t *testing.T, k *kernel.Kernel, block, path string) string {
	t.Helper()
	v, err := k.Blocks().ReadNode(context.Background(), block, At(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return v.Content
}

// ToolUse is a tool_use block of a script.
func ToolUse(id, name string, input any) string {
	in, _ := json.Marshal(input)
	return fmt.Sprintf(`{"type":"tool_use","id":%q,"name":%q,"input":%s}`, id, name, in)
}

// Replies builds a script: each entry a response's content blocks.
func Replies(entries ...string) string {
	var b strings.Builder
	b.WriteString(`{"responses":[`)
	for i, e := range entries {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"content":[` + e + `]}`)
	}
	b.WriteString(`]}`)
	return b.String()
}

// TextBlock is a text block of a script.
func TextBlock(s string) string {
	data, _ := json.Marshal(s)
	return `{"type":"text","text":` + string(data) + `}`
}

// Clock is a clock a test moves by hand.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock is a Clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set sets the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) { c.Set(c.Now().Add(d)) }

// Beach is a beach on loopback over SQLite or PostgreSQL.
type Beach struct {
	URL, DSN, Dialect string
}

// StartBeach serves a beach over a new database of kind ("sqlite" or
// "postgres", which needs pgtest.Main) until the test ends.
func StartBeach(t *testing.T, kind string) *Beach {
	t.Helper()
	dsn := filepath.Join(t.TempDir(), "beach.db")
	if kind == "postgres" {
		dsn = pgtest.New(t)
	}
	st, err := bstore.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("closing the beach's store: %v", err)
		}
	})
	hs := httptest.NewUnstartedServer(nil)
	srv, err := server.New(server.Config{Store: st, Addr: hs.Listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	hs.Config.Handler = srv.Handler()
	hs.Start()
	t.Cleanup(hs.Close)
	return &Beach{URL: hs.URL, DSN: dsn, Dialect: st.Dialect()}
}

// Exec runs SQL on the beach's database behind the server's back: a
// dishonest beach.
func (b *Beach) Exec(t *testing.T, query string, args ...any) {
	t.Helper()
	driver := "sqlite"
	if b.Dialect == "postgres" {
		driver = "pgx"
	}
	db, err := sql.Open(driver, b.DSN)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(query, args...)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Post sends an envelope to a beach route and returns the status and the
// refusal's reason.
func Post(t *testing.T, url string, e *identity.Envelope) (int, string) {
	t.Helper()
	data, _ := json.Marshal(e)
	resp, err := http.Post(url, "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Reason string `json:"reason"`
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("the beach's answer (HTTP %d): %v", resp.StatusCode, err)
	}
	return resp.StatusCode, out.Reason
}

// FakeAnthropic starts the strict fake Anthropic server playing the script
// and returns a client that reaches it through the real SDK.
func FakeAnthropic(t *testing.T, scriptJSON string) (*llm.Client, *llmtest.Server) {
	t.Helper()
	s, err := script.Parse([]byte(scriptJSON))
	if err != nil {
		t.Fatalf("script: %v", err)
	}
	srv := llmtest.NewServer(s)
	t.Cleanup(srv.Close)
	p, err := anthropic.New(anthropic.Config{APIKey: "test-key", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return &llm.Client{Provider: p}, srv
}

// NetInstance is an instance with its own key, its own fake LLM (the
// strict fake Anthropic server playing scriptJSON) and the beach.
func NetInstance(t *testing.T, id *identity.Identity, beachURL, scriptJSON string, tune ...func(*kernel.Options)) (*kernel.Kernel, *llmtest.Server) {
	t.Helper()
	dir := t.TempDir()
	if id != nil {
		if err := id.Save(filepath.Join(dir, identity.KeyFile)); err != nil {
			t.Fatal(err)
		}
	}
	client, srv := FakeAnthropic(t, scriptJSON)
	o := kernel.Options{Client: client, ServerTools: true, Beach: beachURL}
	for _, f := range tune {
		f(&o)
	}
	return OpenIn(t, dir, o), srv
}

// EveryRequestAcceptedAndEchoed fails unless the server answered every
// request and every block it served came back byte for byte.
func EveryRequestAcceptedAndEchoed(t *testing.T, srv *llmtest.Server, want int) {
	t.Helper()
	got := srv.Received()
	if len(got) != want || srv.Remaining() != 0 {
		t.Errorf("server received %d requests with %d entries unused, want %d and 0", len(got), srv.Remaining(), want)
	}
	for i, r := range got {
		if r.Status != 200 {
			t.Errorf("request %d refused: %d %s", i+1, r.Status, r.Response)
		}
		if b := r.Header.Values("anthropic-beta"); b != nil {
			t.Errorf("request %d sent anthropic-beta %q; its tools need none", i+1, b)
		}
	}
	if err := srv.CheckRoundTrips(); err != nil {
		t.Errorf("blocks did not come back byte for byte:\n%v", err)
	}
}
