package server

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/beach"
	"github.com/llmkernels/kernels/hermitcrab/beach/store"
	"github.com/llmkernels/kernels/hermitcrab/identity"
	"github.com/llmkernels/kernels/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testBeach is a beach served on loopback.
type testBeach struct {
	*Server
	URL string
	DSN string
	srv *httptest.Server
}

// startBeach serves a beach on a database of kind ("sqlite" or "postgres").
func startBeach(t testing.TB, kind string, tune func(*Config)) *testBeach {
	t.Helper()
	dsn := filepath.Join(t.TempDir(), "beach.db")
	if kind == "postgres" {
		dsn = pgtest.New(t)
	}
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	hs := httptest.NewUnstartedServer(nil)
	cfg := Config{Store: st, Addr: hs.Listener.Addr().String()}
	if tune != nil {
		tune(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs.Config.Handler = s.Handler()
	hs.Start()
	t.Cleanup(hs.Close)
	return &testBeach{Server: s, URL: hs.URL, DSN: dsn, srv: hs}
}

func bothDatabases(t *testing.T, fn func(t *testing.T, kind string)) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) { fn(t, kind) })
	}
}

func newAgent(t testing.TB, b *testBeach) (*identity.Identity, *beach.Client) {
	t.Helper()
	id, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	c, err := beach.NewClient(b.URL, id)
	if err != nil {
		t.Fatal(err)
	}
	return id, c
}

// post sends an envelope as raw JSON and returns the status and reason.
func post(t testing.TB, b *testBeach, path string, e any) (int, string) {
	t.Helper()
	data, _ := json.Marshal(e)
	return postText(t, b, path, data)
}

// postText sends a body as it is and returns the status and reason.
func postText(t testing.TB, b *testBeach, path string, data []byte) (int, string) {
	t.Helper()
	resp, err := http.Post(b.URL+path, "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Reason string }
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out.Reason
}

func reasonOf(err error) string {
	if e, ok := err.(*beach.Error); ok {
		return e.Reason
	}
	return fmt.Sprintf("not a beach.Error: %v", err)
}

func TestTheBeachRefusesWhatDoesNotVerify(t *testing.T) {
	bothDatabases(t, func(t *testing.T, kind string) {
		b := startBeach(t, kind, nil)
		ctx := context.Background()
		alice, ac := newAgent(t, b)
		mallory, mc := newAgent(t, b)
		bob, bc := newAgent(t, b)
		if _, err := ac.PublishPassport(ctx, beach.Passport{Name: "alice", Offers: []string{"0.23"}}); err != nil {
			t.Fatal(err)
		}

		// A forged passport: mallory's signature under alice's id.
		forged, _ := mallory.Sign(beach.KindPassport, beach.Passport{Name: "alice (honest)"}, time.Now())
		forged.Agent = alice.Agent()
		if st, r := post(t, b, "/v1/passports", forged); st != http.StatusUnauthorized || r != identity.ReasonSignature {
			t.Fatalf("forged passport: %d %s", st, r)
		}
		if p, err := bc.Passport(ctx, alice.Agent()); err != nil || p.Body.Name != "alice" {
			t.Fatalf("alice's passport after the forgery: %+v %v", p, err)
		}

		// A message signed by the wrong key.
		wrong, _ := mallory.Sign(beach.KindMessage, beach.Message{To: bob.Agent(), Type: beach.TypeGeneral, Content: "from alice, honest"}, time.Now())
		wrong.Agent = alice.Agent()
		if st, r := post(t, b, "/v1/messages", wrong); st != http.StatusUnauthorized || r != identity.ReasonSignature {
			t.Fatalf("message signed by the wrong key: %d %s", st, r)
		}
		// An altered message.
		good, _ := alice.Sign(beach.KindMessage, beach.Message{To: bob.Agent(), Type: beach.TypeGrainProbe, Content: "hello bob"}, time.Now())
		altered := *good
		altered.Body = json.RawMessage(strings.Replace(string(good.Body), "hello bob", "send money", 1))
		if st, r := post(t, b, "/v1/messages", altered); st != http.StatusUnauthorized || r != identity.ReasonSignature {
			t.Fatalf("altered message: %d %s", st, r)
		}
		// The genuine message is accepted once; the same envelope again is a replay.
		if st, r := post(t, b, "/v1/messages", good); st != http.StatusOK {
			t.Fatalf("genuine message: %d %s", st, r)
		}
		if st, r := post(t, b, "/v1/messages", good); st != http.StatusConflict || r != identity.ReasonReplay {
			t.Fatalf("replayed message: %d %s", st, r)
		}
		// Old and future envelopes are outside the window.
		for _, skew := range []time.Duration{-10 * time.Minute, 10 * time.Minute} {
			old, _ := alice.Sign(beach.KindMessage, beach.Message{To: bob.Agent(), Type: beach.TypeGeneral, Content: "late"}, time.Now().Add(skew))
			if st, r := post(t, b, "/v1/messages", old); st != http.StatusUnauthorized || r != identity.ReasonStale {
				t.Fatalf("message signed %s away: %d %s", skew, st, r)
			}
		}
		// A valid mark sent as a message is the wrong kind.
		mark, _ := alice.Sign(beach.KindMark, beach.Mark{URLHash: beach.URLHash("https://x.example")}, time.Now())
		if st, r := post(t, b, "/v1/messages", mark); st != http.StatusBadRequest || r != identity.ReasonKind {
			t.Fatalf("mark posted as a message: %d %s", st, r)
		}
		// Bad bodies.
		for name, m := range map[string]beach.Message{
			"unknown type":     {To: bob.Agent(), Type: "spam", Content: "x"},
			"empty content":    {To: bob.Agent(), Type: beach.TypeGeneral},
			"to is not an id":  {To: "bob", Type: beach.TypeGeneral, Content: "x"},
			"content too long": {To: bob.Agent(), Type: beach.TypeGeneral, Content: strings.Repeat("é", beach.MaxContent+1)},
		} {
			if _, err := ac.Send(ctx, m); reasonOf(err) != identity.ReasonMalformed {
				t.Errorf("%s: %v", name, err)
			}
		}
		// An inbox read addressed to another beach is refused.
		elsewhere, _ := bob.Sign(beach.KindInboxCheck, beach.Audience{Beach: "beach.evil.example"}, time.Now())
		if st, r := post(t, b, "/v1/inbox", elsewhere); st != http.StatusForbidden || r != "wrong_beach" {
			t.Fatalf("inbox read for another beach: %d %s", st, r)
		}
		// Mallory cannot read bob's inbox: an inbox read is the signer's own.
		if msgs, _, err := mc.Inbox(ctx, 10); err != nil || len(msgs) != 0 {
			t.Fatalf("mallory's inbox: %v %v", msgs, err)
		}
		msgs, refused, err := bc.Inbox(ctx, 10)
		if err != nil || len(refused) != 0 || len(msgs) != 1 || msgs[0].Body.Content != "hello bob" || msgs[0].Agent != alice.Agent() {
			t.Fatalf("bob's inbox: %+v %+v %v", msgs, refused, err)
		}
		if again, _, _ := bc.Inbox(ctx, 10); len(again) != 0 {
			t.Fatalf("a second check returned %d messages again", len(again))
		}
		// Fetching again after a lost answer: the message comes back, and
		// a receiver that had in fact accepted it refuses it as a replay,
		// while a receiver that had not (a fresh client: the answer was
		// lost) accepts it.
		if got, refused, err := bc.InboxAfter(ctx, msgs[0].ID-1, 10); err != nil || len(got) != 0 || len(refused) != 1 || refused[0].Reason != identity.ReasonReplay {
			t.Fatalf("re-fetch by the same receiver: %+v %+v %v", got, refused, err)
		}
		fresh, _ := beach.NewClient(b.URL, bob)
		if got, _, err := fresh.InboxAfter(ctx, msgs[0].ID-1, 10); err != nil || len(got) != 1 {
			t.Fatalf("re-fetch after a lost answer: %+v %v", got, err)
		}
		// An older passport does not replace a newer one.
		older, _ := alice.Sign(beach.KindPassport, beach.Passport{Name: "alice, earlier"}, time.Now().Add(-time.Minute))
		if st, r := post(t, b, "/v1/passports", older); st != http.StatusConflict || r != "superseded" {
			t.Fatalf("older passport: %d %s", st, r)
		}
	})
}

// A dishonest beach (here: someone with write access to its database)
// cannot make a receiving instance accept a forged or replayed message.
func TestTheReceiverVerifiesWhatTheBeachHandsOut(t *testing.T) {
	bothDatabases(t, func(t *testing.T, kind string) {
		b := startBeach(t, kind, nil)
		ctx := context.Background()
		alice, ac := newAgent(t, b)
		mallory, _ := newAgent(t, b)
		bob, bc := newAgent(t, b)
		if _, err := ac.Send(ctx, beach.Message{To: bob.Agent(), Type: beach.TypeGeneral, Content: "one"}); err != nil {
			t.Fatal(err)
		}
		if got, _, err := bc.Inbox(ctx, 10); err != nil || len(got) != 1 {
			t.Fatalf("first read: %v %v", got, err)
		}
		driver := "sqlite"
		if kind == "postgres" {
			driver = "pgx"
		}
		db, err := sql.Open(driver, b.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		// Replay: the delivered message handed out again.
		if _, err := db.Exec(`UPDATE beach_messages SET read_at = NULL`); err != nil {
			t.Fatal(err)
		}
		// Forgery: a message under alice's name with mallory's signature,
		// and a message for someone else slipped into bob's inbox.
		forged, _ := mallory.Sign(beach.KindMessage, beach.Message{To: bob.Agent(), Type: beach.TypeGeneral, Content: "forged"}, time.Now())
		forged.Agent = alice.Agent()
		misdelivered, _ := alice.Sign(beach.KindMessage, beach.Message{To: mallory.Agent(), Type: beach.TypeGeneral, Content: "not for bob"}, time.Now())
		for _, e := range []*identity.Envelope{forged, misdelivered} {
			data, _ := json.Marshal(e)
			if _, err := db.Exec(`INSERT INTO beach_messages (sender, recipient, type, time, received, envelope) VALUES ($1, $2, 'general', 'x', 'x', $3)`,
				alice.Agent(), bob.Agent(), string(data)); err != nil {
				t.Fatal(err)
			}
		}
		got, refused, err := bc.Inbox(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		reasons := map[string]bool{}
		for _, r := range refused {
			reasons[r.Reason] = true
		}
		if len(got) != 0 || len(refused) != 3 || !reasons[identity.ReasonReplay] || !reasons[identity.ReasonSignature] || !reasons["wrong_recipient"] {
			t.Fatalf("accepted %+v, refused %+v; want the replay, the forgery and the misdelivery refused", got, refused)
		}
	})
}

func TestTheHostRuleGuardsEveryRoute(t *testing.T) {
	b := startBeach(t, "sqlite", nil)
	alice, _ := identity.Generate()
	env, _ := alice.Sign(beach.KindPassport, beach.Passport{Name: "alice"}, time.Now())
	data, _ := json.Marshal(env)
	for _, route := range []string{"GET /v1/info", "POST /v1/passports", "GET /v1/passports", "GET /v1/passports/" + alice.Agent(),
		"POST /v1/marks", "GET /v1/marks?url=x", "POST /v1/messages", "POST /v1/inbox", "POST /v1/savepoints", "POST /v1/savepoints/get",
		"POST /mcp", "GET /mcp", "GET /nowhere"} {
		method, path, _ := strings.Cut(route, " ")
		for _, host := range []string{"evil.example", "localhost.evil.example:80"} {
			req, _ := http.NewRequest(method, b.URL+path, bytes.NewReader(data))
			req.Host = host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMisdirectedRequest {
				t.Errorf("%s with Host %s: status %d, want 421", route, host, resp.StatusCode)
			}
		}
	}
	// The refused passport was not stored.
	resp, err := http.Get(b.URL + "/v1/passports/" + alice.Agent())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("passport after refused writes: status %d, want 404", resp.StatusCode)
	}
}

func TestLimits(t *testing.T) {
	t.Run("body size", func(t *testing.T) {
		b := startBeach(t, "sqlite", func(c *Config) { c.MaxBody = 4 << 10 })
		alice, _ := identity.Generate()
		bob, _ := identity.Generate()
		env, _ := alice.Sign(beach.KindMessage, beach.Message{To: bob.Agent(), Type: beach.TypeGeneral, Content: strings.Repeat("x", 8<<10)}, time.Now())
		if st, r := post(t, b, "/v1/messages", env); st != http.StatusRequestEntityTooLarge || r != "too_large" {
			t.Fatalf("8 KiB body (with its length) on a 4 KiB limit: %d %q, want 413 too_large", st, r)
		}
		// Chunked, without a length: cut while reading.
		data, _ := json.Marshal(env)
		resp, err := http.Post(b.URL+"/v1/messages", "application/json", io.MultiReader(bytes.NewReader(data)))
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ Reason string }
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || out.Reason != "too_large" {
			t.Fatalf("chunked oversized body: %d %s", resp.StatusCode, out.Reason)
		}
	})
	t.Run("per agent", func(t *testing.T) {
		b := startBeach(t, "sqlite", func(c *Config) { c.AgentPerMinute, c.AgentBurst = 1, 3 })
		ctx := context.Background()
		_, ac := newAgent(t, b)
		ac.HTTP.Timeout = 5 * time.Second
		_, other := newAgent(t, b)
		for i := range 3 {
			if _, err := ac.Mark(ctx, fmt.Sprint("https://x.example/", i), "p"); err != nil {
				t.Fatalf("mark %d within the burst: %v", i, err)
			}
		}
		// Past the burst: refused with Retry-After (the client retries up
		// to three times, then reports it).
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err := ac.Mark(rctx, "https://x.example/4", "p")
		if err == nil || (reasonOf(err) != "rate_limited" && rctx.Err() == nil) {
			t.Fatalf("fourth mark: %v, want rate_limited", err)
		}
		// Another agent is not affected.
		if _, err := other.Mark(ctx, "https://x.example/", "p"); err != nil {
			t.Fatalf("another agent: %v", err)
		}
		// Replays are refused without spending the allowance (see
		// TestReplaysDoNotSpendTheSignersAllowance); new envelopes spend it.
		alice, _ := identity.Generate()
		env, _ := alice.Sign(beach.KindMark, beach.Mark{URLHash: beach.URLHash("u")}, time.Now())
		for i := range 3 {
			if st, r := post(t, b, "/v1/marks", env); i > 0 && r != identity.ReasonReplay {
				t.Fatalf("replay %d: %d %s", i, st, r)
			}
		}
		for i, u := range []string{"v", "w", "x"} {
			e, _ := alice.Sign(beach.KindMark, beach.Mark{URLHash: beach.URLHash(u)}, time.Now())
			st, r := post(t, b, "/v1/marks", e)
			if i < 2 && st != http.StatusOK {
				t.Fatalf("signed request %d of one agent, within the burst: %d %s", i+2, st, r)
			}
			if i == 2 && (st != http.StatusTooManyRequests || r != "rate_limited") {
				t.Fatalf("fourth signed request of one agent: %d %s", st, r)
			}
		}
	})
	t.Run("per address", func(t *testing.T) {
		b := startBeach(t, "sqlite", func(c *Config) { c.AddrPerMinute, c.AddrBurst = 1, 5 })
		codes := map[int]int{}
		for range 8 {
			resp, err := http.Get(b.URL + "/v1/info")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			codes[resp.StatusCode]++
			if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		}
		if codes[200] != 5 || codes[429] != 3 {
			t.Fatalf("statuses %v, want 5×200 then 3×429", codes)
		}
	})
}

func TestSavePointRoundTripAndItsRefusals(t *testing.T) {
	bothDatabases(t, func(t *testing.T, kind string) {
		b := startBeach(t, kind, nil)
		ctx := context.Background()
		dir := t.TempDir()
		id, err := identity.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := beach.NewClient(b.URL, id)
		export := []byte(`{"blocks":{"purpose":{"decimal":1,"tree":{"_":"to be restored"}}}}`)
		if _, err := c.Save(ctx, export); err != nil {
			t.Fatal(err)
		}
		// A new machine: only the key file travels.
		again, err := identity.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		c2, _ := beach.NewClient(b.URL, again)
		got, v, err := c2.Restore(ctx)
		if err != nil || !bytes.Equal(got, export) || v.Agent != id.Agent() {
			t.Fatalf("restore: %s %v", got, err)
		}
		// The beach holds only ciphertext.
		if strings.Contains(string(v.Envelope.Body), "to be restored") {
			t.Fatal("the save point on the beach is readable")
		}
		// Another key has no save point here, and cannot open this one.
		_, oc := newAgent(t, b)
		if _, _, err := oc.Restore(ctx); reasonOf(err) != "not_found" {
			t.Fatalf("another agent's restore: %v", err)
		}
		other, _ := identity.Generate()
		if _, err := v.Body.Open(other); err == nil {
			t.Fatal("another key opened the save point")
		}
	})
}

// Anyone can read an agent's public envelopes (its passport, its marks)
// and post them again. Those replays are refused, and must not spend the
// agent's rate allowance: otherwise a stranger locks any agent out of the
// beach by replaying what it just published.
func TestReplaysDoNotSpendTheSignersAllowance(t *testing.T) {
	bothDatabases(t, func(t *testing.T, kind string) {
		b := startBeach(t, kind, func(c *Config) { c.AgentPerMinute, c.AgentBurst = 1, 3 })
		ctx := context.Background()
		alice, ac := newAgent(t, b)
		ac.HTTP.Timeout = 5 * time.Second
		if _, err := ac.PublishPassport(ctx, beach.Passport{Name: "alice"}); err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(b.URL + "/v1/passports/" + alice.Agent())
		if err != nil {
			t.Fatal(err)
		}
		var stored struct{ Envelope json.RawMessage }
		_ = json.NewDecoder(resp.Body).Decode(&stored)
		resp.Body.Close()
		for range 10 {
			if st, r := post(t, b, "/v1/passports", stored.Envelope); st != http.StatusConflict || r != identity.ReasonReplay {
				t.Fatalf("a stranger's replay of alice's passport: %d %s, want 409 replayed", st, r)
			}
		}
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if _, err := ac.Mark(rctx, "https://example.org/", "still here"); err != nil {
			t.Fatalf("alice's own write after a stranger replayed her passport: %v", err)
		}
	})
}

// An open read must not answer with tens of megabytes: 500 passports of
// the largest size (each field at its limit, in characters JSON escapes
// six bytes wide) would make one unauthenticated GET cost the beach ~45 MB
// to read, encode and send, twenty times a second per address.
func TestListsAreBoundedInBytes(t *testing.T) {
	b := startBeach(t, "sqlite", func(c *Config) { c.AgentPerMinute, c.AddrPerMinute = -1, -1 })
	ctx := context.Background()
	wide := func(n int) string { return strings.Repeat("\x01", n) }
	var coords []string
	for range beach.MaxCoordinates {
		coords = append(coords, wide(beach.MaxCoordinate))
	}
	big := beach.Passport{Name: wide(beach.MaxName), Description: wide(beach.MaxDescription), Offers: coords, Needs: coords}
	hash := beach.URLHash("https://example.org/")
	// 40 passports of ~90 KB pass the bound (1 MiB) nearly four times over.
	for range 40 {
		id, _ := identity.Generate()
		e, _ := id.Sign(beach.KindPassport, big, time.Now())
		if _, err := b.PublishPassport(ctx, e); err != nil {
			t.Fatal(err)
		}
		m, _ := id.Sign(beach.KindMark, beach.Mark{URLHash: hash, Purpose: wide(beach.MaxPurpose)}, time.Now())
		if _, err := b.Mark(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{"/v1/passports?limit=500", "/v1/marks?limit=500&url_hash=" + hash} {
		resp, err := http.Get(b.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(data) > store.MaxListBytes+256<<10 || !bytes.Contains(data, []byte(`"envelope"`)) {
			t.Fatalf("GET %s: %d, %d bytes (at most %d of envelopes wanted)", path, resp.StatusCode, len(data), store.MaxListBytes)
		}
	}
}

// The beach keeps and hands out the body exactly as it was signed: in
// canonical JSON, however the writer spelled it on the way.
func TestTheBeachStoresTheCanonicalBody(t *testing.T) {
	b := startBeach(t, "sqlite", nil)
	alice, _ := identity.Generate()
	e, _ := alice.Sign(beach.KindPassport, beach.Passport{Name: "é <b> & co"}, time.Now())
	e.Body = json.RawMessage(`{ "name" : "\u00e9 \u003cb\u003e \u0026 co" }`)
	if st, r := post(t, b, "/v1/passports", e); st != http.StatusOK {
		t.Fatalf("re-spelled body: %d %s", st, r)
	}
	p, err := b.Passport(context.Background(), alice.Agent())
	if err != nil {
		t.Fatal(err)
	}
	var stored identity.Envelope
	if err := json.Unmarshal(p.Envelope, &stored); err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"é <b> & co"}`; string(stored.Body) != want {
		t.Fatalf("stored body %s, want %s", stored.Body, want)
	}
}

// Slowloris: connections that send half a request header hold a socket
// and a goroutine each until ReadHeaderTimeout, and are opened before any
// rate limit can see a request. One address may hold at most its burst of
// connections; the rest are closed at once, and another address is served.
func TestOneAddressCannotHoldEveryConnection(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "beach.db")
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := New(Config{Store: st, Addr: "127.0.0.1:0", AddrBurst: 8})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	urlc := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe(ctx, func(u string) { urlc <- u }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	base := <-urlc
	addr := strings.TrimPrefix(base, "http://")
	const opened = 40
	conns := make([]net.Conn, 0, opened)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range opened {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(c, "GET /v1/info HTTP/1.1\r\nHost: localhost\r\nX-Slow: ") // and never the rest
		conns = append(conns, c)
	}
	// Well before ReadHeaderTimeout (10 s) would close them all.
	deadline := time.Now().Add(3 * time.Second)
	var closed atomic.Int64
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(deadline)
			if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
				closed.Add(1)
			}
		}()
	}
	wg.Wait()
	if closed.Load() < opened-8 {
		t.Fatalf("%d of %d half-open connections from one address were closed; want all but 8", closed.Load(), opened)
	}
	// Another address is still served.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 30 * time.Second}
	resp, err := client.Get(base + "/v1/info")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("another address: %d", resp.StatusCode)
	}
}

// Nonces are pruned by the pruning server's window and clock. Another
// server on the same database with a longer window (or the same beach
// restarted with one), or a pruning server whose clock runs ahead, must
// not then accept an envelope whose nonce was forgotten.
func TestAPrunedNonceCannotBeReplayedThroughAnotherWindowOrClock(t *testing.T) {
	bothDatabases(t, func(t *testing.T, kind string) {
		// Two servers on one (new) database.
		pair := func(prunerWindow, prunerSkew, window time.Duration) [2]*Server {
			dsn := filepath.Join(t.TempDir(), "beach.db")
			if kind == "postgres" {
				dsn = pgtest.New(t)
			}
			return [2]*Server{openServer(t, dsn, prunerWindow, prunerSkew), openServer(t, dsn, window, 0)}
		}
		ctx := context.Background()
		alice, _ := identity.Generate()
		bob, _ := identity.Generate()
		for name, c := range map[string][2]*Server{
			"a shorter window prunes": pair(time.Minute, 0, 10*time.Minute),
			"a clock ahead prunes":    pair(5*time.Minute, 3*time.Minute, 5*time.Minute),
		} {
			pruner, acceptor := c[0], c[1]
			e, _ := alice.Sign(beach.KindMessage, beach.Message{To: bob.Agent(), Type: beach.TypeGeneral, Content: name}, time.Now().Add(-4*time.Minute-30*time.Second))
			if _, err := acceptor.Send(ctx, e); err != nil {
				t.Fatalf("%s: first delivery: %v", name, err)
			}
			if _, err := pruner.PruneNonces(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := acceptor.Send(ctx, e); err == nil || acceptor.classify(err).reason != identity.ReasonStale {
				t.Fatalf("%s: the same envelope after its nonce was pruned: %v, want it refused as stale", name, err)
			}
			// A new envelope within every window is still accepted.
			fresh, _ := alice.Sign(beach.KindMessage, beach.Message{To: bob.Agent(), Type: beach.TypeGeneral, Content: name}, time.Now())
			if _, err := acceptor.Send(ctx, fresh); err != nil {
				t.Fatalf("%s: a fresh envelope: %v", name, err)
			}
		}
	})
}

// openServer makes a beach server (not served) with a window and a clock skew
// on the database dsn.
func openServer(t *testing.T, dsn string, window, skew time.Duration) *Server {
	t.Helper()
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s, err := New(Config{Store: st, Addr: "127.0.0.1:8421", Window: window})
	if err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return time.Now().Add(skew) }
	return s
}

// A save point upload may be 12 MiB, and reading, decoding and checking
// one costs the beach ~80 MB before its signature can be refused: forty
// junk uploads at once took a beach to 3.2 GB. Only a few large bodies are
// read at once; another is refused at once with 503 and Retry-After (the
// client retries), while small requests go on being served.
func TestOnlyAFewLargeBodiesAreReadAtOnce(t *testing.T) {
	// Without the per-address rate limit: it runs after a body's slot is
	// taken, so a stalled upload it refused would give its slot back
	// (this test is about the slots; the rate limit has its own tests).
	b := startBeach(t, "sqlite", func(c *Config) { c.AddrPerMinute = -1 })
	addr := strings.TrimPrefix(b.URL, "http://")
	// Uploads that announce 5 MB and then stall, holding their slots.
	stall := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "POST /v1/savepoints HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", 5<<20)
		return c
	}
	// answered reports whether the server replied to a stalled upload: one
	// read before the probe below released its slot was refused with 503.
	answered := func(c net.Conn) bool {
		c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		n, err := c.Read(make([]byte, 1))
		var ne net.Error
		return n > 0 || !errors.As(err, &ne) || !ne.Timeout()
	}
	stalled := make([]net.Conn, MaxLargeBodies)
	for i := range stalled {
		stalled[i] = stall()
	}
	defer func() {
		for _, c := range stalled {
			c.Close()
		}
	}()
	client := &http.Client{Timeout: 20 * time.Second}
	var resp *http.Response
	for deadline := time.Now().Add(60 * time.Second); ; {
		// The stalled uploads take their slots as the server reads their
		// headers: until then the probe may take one, and a stalled upload
		// read meanwhile is refused; it is dialled again.
		for i, c := range stalled {
			if answered(c) {
				c.Close()
				stalled[i] = stall()
			}
		}
		req, _ := http.NewRequest(http.MethodPost, b.URL+"/v1/savepoints", bytes.NewReader(bytes.Repeat([]byte(" "), 1<<20)))
		var err error
		if resp, err = client.Do(req); err != nil {
			t.Fatalf("a large upload while %d stall: %v (it should be refused at once)", MaxLargeBodies, err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable || time.Now().After(deadline) {
			break
		}
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a large upload while %d stall: %d (Retry-After %q), want 503 with Retry-After", MaxLargeBodies, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// Small requests, and small MCP calls, do not wait for a slot.
	_, c := newAgent(t, b)
	if _, err := c.Mark(context.Background(), "https://example.org/", "small"); err != nil {
		t.Fatalf("a small write while the large ones stall: %v", err)
	}
}
