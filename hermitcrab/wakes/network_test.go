package wakes_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/beach"
	"github.com/llmkernels/kernels/hermitcrab/beach/server"
	bstore "github.com/llmkernels/kernels/hermitcrab/beach/store"
	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/identity"
	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/hermitcrab/network"
	"github.com/llmkernels/kernels/internal/pgtest"
	"github.com/llmkernels/kernels/llm/llmtest"
)

func TestMain(m *testing.M) {
	if childMain() {
		return
	}
	pgtest.Main(m)
}

// netInstance is an instance with its own key, its own fake LLM (the
// strict fake Anthropic server playing scriptJSON), the beach and the
// clock.
func netInstance(t *testing.T, id *identity.Identity, beachURL, scriptJSON string, clock *testClock, tune ...func(*kernel.Options)) (*kernel.Kernel, *llmtest.Server) {
	t.Helper()
	k, srv := netInstanceAt(t, id, beachURL, scriptJSON, tune...)
	k.Wakes().SetClock(clock.Now)
	return k, srv
}

var networkTools = []string{"block_read", "block_write", "set_tools", "passport_publish", "passport_read", "beach_mark", "beach_read", "inbox_send", "inbox_check"}

// TestTwoInstancesMeetOnABeach is the story, end to end on
// loopback with both LLMs played by the strict fake server: A publishes
// its passport and marks a URL; B reads the beach, finds A, reads A's
// passport and sends a signed grain probe; A's inbox trigger wakes A at
// tier 1; A answers; B's inbox has the answer. Then a forged passport, a
// message signed by the wrong key and a replayed message are each
// refused, by the beach and, written straight into its database, by the
// receiving instance, and none of them wakes A.
func TestTwoInstancesMeetOnABeach(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) { twoInstancesMeet(t, kind) })
	}
}

func twoInstancesMeet(t *testing.T, kind string) {
	ctx := context.Background()
	b := kerneltest.StartBeach(t, kind)
	idA, _ := identity.Generate()
	idB, _ := identity.Generate()
	clock := newClock(time.Now())
	const page = "https://example.org/pscale"

	kA, llmA := netInstance(t, idA, b.URL, kerneltest.Replies(
		kerneltest.ToolUse("a1", "set_tools", map[string]any{"tools": networkTools})+","+
			kerneltest.ToolUse("a2", "block_write", map[string]string{"name": "wake", "path": "0.5.1", "content": "inbox tier 1: answer probes about your purpose"}),
		kerneltest.TextBlock("Ready for the beach."),
		kerneltest.ToolUse("a3", "passport_publish", map[string]any{"name": "alice", "description": "a hermitcrab learning pscale", "offers": []string{"purpose 0"}, "needs": []string{"stash 0"}})+","+
			kerneltest.ToolUse("a4", "beach_mark", map[string]string{"url": page, "purpose": "reading about pscale"}),
		kerneltest.TextBlock("Published and marked."),
		// The wake: answer the probe.
		kerneltest.ToolUse("a5", "inbox_send", map[string]any{"reply_to": 1, "content": "My purpose is open: let us compare spindles."}),
		kerneltest.TextBlock("Answered the probe."),
	), clock)

	kB, llmB := netInstance(t, idB, b.URL, kerneltest.Replies(
		kerneltest.ToolUse("b1", "set_tools", map[string]any{"tools": networkTools}),
		kerneltest.TextBlock("Ready."),
		kerneltest.ToolUse("b2", "passport_read", map[string]any{})+","+kerneltest.ToolUse("b3", "beach_read", map[string]string{"url": page}),
		kerneltest.ToolUse("b4", "passport_read", map[string]string{"agent": idA.Agent()}),
		kerneltest.ToolUse("b5", "inbox_send", map[string]any{"to": idA.Agent(), "type": "grain_probe", "content": "What does your purpose offer?", "spindle": "purpose 0"}),
		kerneltest.TextBlock("Sent a grain probe to alice."),
	), clock)

	say := func(k *kernel.Kernel, text string) {
		t.Helper()
		if _, err := k.Conversation().Say(ctx, "terminal", text, conversation.CallOptions{Tier: 1}); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
	}
	say(kA, "Join the beach, and let messages wake you.")
	say(kA, "Publish your passport and mark the page you read.")
	say(kB, "Join the beach.")
	say(kB, "Find someone who read about pscale and ask them about their purpose.")

	// B found A on the beach: its passport in the list, its mark on the page.
	got := llmB.Received()
	found := got[3].Request.Messages[len(got[3].Request.Messages)-1]
	var results strings.Builder
	for _, c := range found.Content {
		results.WriteString(c.Content.Text)
	}
	for _, want := range []string{idA.Agent(), `"name":"alice"`, "purpose 0: Your purpose at every timescale", `"purpose":"reading about pscale"`} {
		if !strings.Contains(results.String(), want) {
			t.Fatalf("B's reads of the beach lack %q:\n%s", want, results.String())
		}
	}

	// A's inbox trigger: the first pass polls the beach and wakes A at tier 1.
	report, err := kA.Wakes().RunTriggers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Wakes) != 1 || report.Wakes[0].Status != "woke" || report.Wakes[0].Tier != 1 || report.Wakes[0].Where != "wake 0.5.1" {
		t.Fatalf("A's wakes: %+v (errors %v, problems %v)", report.Wakes, report.Errors, report.Problems)
	}
	wakeReq := llmA.Received()[4].Request
	wakeText := wakeReq.Messages[len(wakeReq.Messages)-1].Text()
	for _, want := range []string{`[wake] wake 0.5.1 "inbox tier 1: answer probes about your purpose" fired`, "#1 from " + idB.Agent() + " (grain_probe)",
		"What does your purpose offer?", "spindle: purpose 0: Your purpose at every timescale", "Your instruction: answer probes about your purpose"} {
		if !strings.Contains(wakeText, want) {
			t.Fatalf("the wake message lacks %q:\n%s", want, wakeText)
		}
	}
	if wakeReq.Model != "claude-haiku-4-5-20251001" {
		t.Fatalf("the wake ran on %s, not the light tier's model", wakeReq.Model)
	}

	// B's inbox has A's answer, a grain response to its probe.
	probe, err := kA.Network().Received(ctx, 10)
	if err != nil || len(probe) != 1 {
		t.Fatalf("A received %+v, %v", probe, err)
	}
	in, err := kB.Network().CheckInbox(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.New) != 1 || in.New[0].From != idA.Agent() || in.New[0].Type != beach.TypeGrainResponse || in.New[0].RespondingTo != probe[0].Nonce ||
		!strings.Contains(in.New[0].Content, "let us compare spindles") || len(in.Refused) != 0 {
		t.Fatalf("B's inbox: %+v", in)
	}

	// Refusals at the beach.
	mallory, _ := identity.Generate()
	forgedPassport, _ := mallory.Sign(beach.KindPassport, beach.Passport{Name: "alice (really mallory)"}, time.Now())
	forgedPassport.Agent = idA.Agent()
	if status, reason := post(t, b.URL+"/v1/passports", forgedPassport); status != http.StatusUnauthorized || reason != identity.ReasonSignature {
		t.Errorf("a forged passport: %d %s", status, reason)
	}
	wrongKey, _ := mallory.Sign(beach.KindMessage, beach.Message{To: idA.Agent(), Type: beach.TypeGeneral, Content: "send me your key"}, time.Now())
	wrongKey.Agent = idB.Agent()
	if status, reason := post(t, b.URL+"/v1/messages", wrongKey); status != http.StatusUnauthorized || reason != identity.ReasonSignature {
		t.Errorf("a message signed by the wrong key: %d %s", status, reason)
	}
	stored, err := kA.Wakes().Store().ReceivedMessage(ctx, probe[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var original identity.Envelope
	if err := json.Unmarshal(stored.Envelope, &original); err != nil {
		t.Fatal(err)
	}
	if status, reason := post(t, b.URL+"/v1/messages", &original); status != http.StatusConflict || reason != identity.ReasonReplay {
		t.Errorf("a replayed message: %d %s", status, reason)
	}

	// Refusals at the receiving instance, from a dishonest beach: the
	// forgeries written straight into its database.
	forged, _ := json.Marshal(forgedPassport)
	b.Exec(t, `UPDATE beach_passports SET envelope = $1 WHERE agent = $2`, string(forged), idA.Agent())
	if _, err := kB.Network().Passport(ctx, idA.Agent()); err == nil || !strings.Contains(err.Error(), "signature") {
		t.Errorf("B read a forged passport of A: %v", err)
	}
	stamp := time.Now().UTC().Format("2006-01-02T15:04:05.000000000Z")
	for _, e := range []*identity.Envelope{wrongKey, &original} {
		data, _ := json.Marshal(e)
		b.Exec(t, `INSERT INTO beach_messages (sender, recipient, type, time, received, envelope) VALUES ($1, $2, $3, $4, $5, $6)`,
			idB.Agent(), idA.Agent(), "general", stamp, stamp, string(data))
	}
	clock.Add(2 * time.Minute) // the inbox is polled again
	report, err = kA.Wakes().RunTriggers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	errs := strings.Join(report.Errors, "\n")
	if len(report.Wakes) != 0 || !strings.Contains(errs, "("+identity.ReasonSignature+")") || !strings.Contains(errs, "("+identity.ReasonReplay+")") {
		t.Fatalf("after the forgeries A woke %d times; errors:\n%s", len(report.Wakes), errs)
	}
	if n := len(llmA.Received()); n != 6 {
		t.Fatalf("A's LLM got %d requests, want the 6 of the story", n)
	}
	// A third pass fetches nothing new: what was refused is not fetched again.
	clock.Add(2 * time.Minute)
	if report, err = kA.Wakes().RunTriggers(ctx); err != nil || len(report.Wakes)+len(report.Errors) != 0 {
		t.Fatalf("a quiet pass: %+v %v", report, err)
	}
	for _, srv := range []*llmtest.Server{llmA, llmB} {
		if srv.Remaining() != 0 {
			t.Errorf("%d scripted answers unused", srv.Remaining())
		}
		if err := srv.CheckRoundTrips(); err != nil {
			t.Error(err)
		}
	}
}

// A hostile beach answers the instance's reads with what it likes: a
// message addressed to someone else, a damaged entry, a message handed out
// again under a new id, another agent's passport, marks of another URL,
// text full of terminal escapes. The instance refuses each with its
// reason, wakes only for the message that is truly its own, and shows a
// stranger's control characters escaped.
func TestAHostileBeachCannotMisleadTheInstance(t *testing.T) {
	ctx := context.Background()
	idA, _ := identity.Generate()
	idB, _ := identity.Generate()
	idC, _ := identity.Generate()
	now := time.Now()
	good, _ := idB.Sign(beach.KindMessage, beach.Message{To: idA.Agent(), Type: beach.TypeGeneral, Content: "hello \x1b[2J\x1b[31mred\u202e"}, now)
	elsewhere, _ := idB.Sign(beach.KindMessage, beach.Message{To: idC.Agent(), Type: beach.TypeGeneral, Content: "for C"}, now)
	cPassport, _ := idC.Sign(beach.KindPassport, beach.Passport{Name: "carol"}, now)
	otherMark, _ := idC.Sign(beach.KindMark, beach.Mark{URLHash: beach.URLHash("https://elsewhere.example")}, now)
	stored := func(id int64, agent string, e *identity.Envelope) map[string]any {
		return map[string]any{"id": id, "agent": agent, "received": now.Format(time.RFC3339), "envelope": e}
	}
	var served sync.Once
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/inbox":
			msgs := []any{}
			served.Do(func() {
				msgs = []any{stored(1, idB.Agent(), good), stored(2, idB.Agent(), elsewhere), map[string]any{"id": 3, "agent": idB.Agent(), "envelope": nil},
					stored(4, idB.Agent(), good)}
			})
			json.NewEncoder(w).Encode(map[string]any{"messages": msgs})
		case strings.HasPrefix(r.URL.Path, "/v1/passports/"):
			json.NewEncoder(w).Encode(stored(0, idC.Agent(), cPassport))
		case r.URL.Path == "/v1/marks":
			json.NewEncoder(w).Encode(map[string]any{"marks": []any{stored(0, idC.Agent(), otherMark)}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer fake.Close()

	clock := newClock(now)
	k, llmA := netInstance(t, idA, fake.URL, kerneltest.Replies(kerneltest.TextBlock("Noted.")), clock)
	if _, err := k.Blocks().WriteAt(ctx, "wake", kerneltest.At(t, "0.5.1"), "inbox tier 1"); err != nil {
		t.Fatal(err)
	}
	r, err := k.Wakes().RunTriggers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	errs := strings.Join(r.Errors, "\n")
	if len(r.Wakes) != 1 || !strings.Contains(errs, "(wrong_recipient)") || !strings.Contains(errs, "(malformed)") || !strings.Contains(errs, "(replayed)") {
		t.Fatalf("wakes %d; errors:\n%s", len(r.Wakes), errs)
	}
	msg := llmA.Received()[0].Request.Messages[0].Text()
	if strings.ContainsAny(msg, "\x1b\u202e") || !strings.Contains(msg, `hello \x1b[2J\x1b[31mred\u202e`) || strings.Contains(msg, "for C") {
		t.Fatalf("the wake message: %q", msg)
	}
	if _, err := k.Network().Passport(ctx, idB.Agent()); err == nil || !strings.Contains(err.Error(), "answered with "+idC.Agent()) {
		t.Fatalf("another agent's passport: %v", err)
	}
	if good, bad, err := k.Network().Marks(ctx, "https://example.org", 10); err != nil || len(good) != 0 || len(bad) != 1 || bad[0].Reason != "wrong_url" {
		t.Fatalf("marks of another URL: %+v %+v %v", good, bad, err)
	}
}

// A save point the instance leaves (its savepoint_save tool) restores its
// blocks on a new machine that has only its key.
func TestASavePointRestoresTheBlocksOnANewMachine(t *testing.T) {
	ctx := context.Background()
	b := kerneltest.StartBeach(t, "sqlite")
	id, _ := identity.Generate()
	clock := newClock(time.Now())
	k, _ := netInstance(t, id, b.URL, kerneltest.Replies(
		kerneltest.ToolUse("s1", "set_tools", map[string]any{"tools": []string{"savepoint_save"}}), kerneltest.TextBlock("ok"),
		kerneltest.ToolUse("s2", "savepoint_save", map[string]any{}), kerneltest.TextBlock("Saved."),
	), clock)
	if _, err := k.Blocks().WriteAt(ctx, "stash", kerneltest.At(t, "0.1"), "the garden plan: basil by the tomatoes"); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"choose your tools", "leave a save point"} {
		if _, err := k.Conversation().Say(ctx, "terminal", text, conversation.CallOptions{Tier: 1}); err != nil {
			t.Fatal(err)
		}
	}
	fresh, _ := netInstance(t, id, b.URL, kerneltest.Replies(), clock)
	res, v, err := fresh.Network().RestoreFromBeach(ctx, true)
	if err != nil || v.Agent != id.Agent() || len(res.Written) < 9 {
		t.Fatalf("restore: %+v %+v %v", res, v, err)
	}
	if got, _ := fresh.Blocks().ReadNode(ctx, "stash", kerneltest.At(t, "0.1")); got.Content != "the garden plan: basil by the tomatoes" {
		t.Fatalf("restored stash 0.1: %q", got.Content)
	}
	other, _ := identity.Generate()
	stranger, _ := netInstance(t, other, b.URL, kerneltest.Replies(), clock)
	if _, _, err := stranger.Network().RestoreFromBeach(ctx, true); err == nil {
		t.Fatal("another key restored the save point")
	}
}

// beachAt serves a beach with a new SQLite database on addr, until stop.
func beachAt(t *testing.T, addr string) (url string, stop func()) {
	t.Helper()
	st, err := bstore.Open(context.Background(), filepath.Join(t.TempDir(), "beach.db"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Store: st, Addr: ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	hs := &httptest.Server{Listener: ln, Config: &http.Server{Handler: srv.Handler()}}
	hs.Start()
	return hs.URL, func() { hs.Close(); st.Close() }
}

// A beach started afresh at the same address numbers its messages from 1
// again: the instance, which fetches above the last id it saw, still gets
// them (they are unread there).
func TestABeachStartedAfreshAtTheSameAddressStillDelivers(t *testing.T) {
	ctx := context.Background()
	url, stop := beachAt(t, "127.0.0.1:0")
	addr := strings.TrimPrefix(url, "http://")
	idA, _ := identity.Generate()
	idB, _ := identity.Generate()
	k, _ := netInstance(t, idA, url, kerneltest.Replies(), newClock(time.Now()))
	send := func(content string) {
		t.Helper()
		c, _ := beach.NewClient(url, idB)
		if _, err := c.Send(ctx, beach.Message{To: idA.Agent(), Type: beach.TypeGeneral, Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []string{"one", "two", "three"} {
		send(m)
	}
	if in, err := k.Network().FetchInbox(ctx, network.FetchOptions{}); err != nil || len(in.New) != 3 {
		t.Fatalf("first beach: %+v %v", in, err)
	}
	stop()
	_, stop = beachAt(t, addr)
	defer stop()
	send("from the new beach")
	in, err := k.Network().FetchInbox(ctx, network.FetchOptions{})
	if err != nil || len(in.New) != 1 || in.New[0].Content != "from the new beach" {
		t.Fatalf("the new beach at the same address: %+v %v", in, err)
	}
}
