package wakes_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/fetch"
	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/hermitcrab/wakes"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/script"
)

// Outages: a post or message is consumed only when a wake that carried it
// got an answer from the model; until then the next wake carries it, also
// after the process was killed.

// outage is an API that answers 500 to every try while down, and from
// its script otherwise.
type outage struct {
	mu    sync.Mutex
	down  bool
	tries int // requests sent while down
	inner *script.Provider
}

func (o *outage) Messages(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	o.mu.Lock()
	down := o.down
	if down {
		o.tries++
	}
	o.mu.Unlock()
	if down {
		return nil, &llm.APIError{Status: 500, Type: "api_error", Message: "Internal server error"}
	}
	return o.inner.Messages(ctx, req)
}

func (o *outage) set(down bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down = down
}

func (o *outage) sent() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.tries
}

// noRetryWait makes the client's retries wait no time.
func noRetryWait(o *kernel.Options) {
	o.Client.Retry.Sleep = func(context.Context, time.Duration) error { return nil }
}

// A webhook post whose wake failed (the API answering 500 to every try)
// is given back: the trigger waits a minute, then two, and so on, and
// the next wake after the outage carries it, with the post that arrived
// meanwhile. Each failed wake sent its request 4 times in all.
func TestAPostWhoseWakeFailedIsCarriedByTheNextWake(t *testing.T) {
	ctx := context.Background()
	clock := newClock(wakeT0)
	api := &outage{down: true, inner: kerneltest.Scripted(t, wakeScript(2, 0))}
	k := openAt(t, t.TempDir(), api, clock, noRetryWait)
	writeTriggers(t, k, "every 1h tier 1: my rhythm")
	if _, err := k.Blocks().WriteAt(ctx, "wake", kerneltest.At(t, "0.5.1"), "webhook ci tier 1: check the build"); err != nil {
		t.Fatal(err)
	}
	pass(t, k)
	if _, err := k.Wakes().Webhook(ctx, "ci", []byte(`{"build":7,"status":"failed"}`)); err != nil {
		t.Fatal(err)
	}
	r := pass(t, k)
	if statuses(r) != "failed" || api.sent() != 4 || !strings.Contains(r.Wakes[0].Reply, "never answered") {
		t.Fatalf("the wake in the outage: %+v, %d tries", r.Wakes, api.sent())
	}
	clock.Add(30 * time.Second)
	if r := pass(t, k); len(r.Wakes) != 0 {
		t.Fatalf("tried again at once: %+v", r.Wakes)
	}
	clock.Add(30 * time.Second) // a minute after the failure
	if r := pass(t, k); statuses(r) != "failed" || api.sent() != 8 {
		t.Fatalf("a minute after the failure: %+v, %d tries", r.Wakes, api.sent())
	}
	if _, err := k.Wakes().Webhook(ctx, "ci", []byte(`{"build":8,"status":"passed"}`)); err != nil {
		t.Fatal(err)
	}
	api.set(false)
	clock.Add(time.Minute)
	if r := pass(t, k); len(r.Wakes) != 0 {
		t.Fatalf("before the doubled wait of two minutes: %+v", r.Wakes)
	}
	clock.Add(time.Hour) // the rhythm is due too
	r = pass(t, k)
	if statuses(r) != "woke,woke" {
		t.Fatalf("after the outage: %+v", r.Wakes)
	}
	msg := api.inner.Requests()[1].Messages
	text := msg[len(msg)-1].Text()
	if !strings.Contains(text, "2 authenticated POST(s) to /hooks/ci") || !strings.Contains(text, `{"build":7,"status":"failed"}`) || !strings.Contains(text, `{"build":8`) {
		t.Fatalf("the wake after the outage did not carry the posts: %s", text)
	}
	clock.Add(time.Hour)
	for _, w := range pass(t, k).Wakes {
		if w.Where == "wake 0.5.1" {
			t.Fatalf("the posts were carried twice: %+v", w)
		}
	}
	all, _ := k.Wakes().List(ctx, 0, 0)
	if len(all) != 5 || all[3].Status != store.WakeFailed || !strings.Contains(all[3].Due, "given back") {
		t.Fatalf("the wakes: %+v", all)
	}
}

// A message fetched from the beach during an outage is not marked
// delivered by the wake that failed: the next inbox wake carries it.
func TestAMessageThatArrivedDuringAnOutageIsDeliveredAfterIt(t *testing.T) {
	ctx := context.Background()
	clock := newClock(wakeT0)
	api := &outage{down: true, inner: kerneltest.Scripted(t, wakeScript(1, 0))}
	k, b, aID := inboxInstance(t, api, clock, noRetryWait)
	pass(t, k)
	sendTo(t, b, aID, "are you there?")
	clock.Add(time.Minute)
	if r := pass(t, k); statuses(r) != "failed" {
		t.Fatalf("the inbox wake in the outage: %+v %v", r.Wakes, r.Errors)
	}
	if n, _ := k.Wakes().Store().CountWaiting(ctx); n != 1 {
		t.Fatalf("after the failed wake %d message(s) wait, want 1", n)
	}
	api.set(false)
	clock.Add(time.Minute)
	if r := pass(t, k); statuses(r) != "woke" {
		t.Fatalf("after the outage: %+v %v", r.Wakes, r.Errors)
	}
	reqs := api.inner.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].Messages[len(reqs[0].Messages)-1].Text(), "are you there?") {
		t.Fatalf("the message was not delivered after the outage: %d requests", len(reqs))
	}
	if n, _ := k.Wakes().Store().CountWaiting(ctx); n != 0 {
		t.Fatalf("%d message(s) still wait", n)
	}
}

// kill -9 during a webhook wake: when the model had not answered, the
// post is carried by the next wake; when it had (its first answer called
// a tool, and the process died on the second request), the post counts as
// delivered and is not carried again.
func TestAKilledWakeGivesBackOnlyWhatTheModelNeverAnswered(t *testing.T) {
	for _, answered := range []bool{false, true} {
		t.Run(fmt.Sprint("answered=", answered), func(t *testing.T) {
			arrived := make(chan struct{}, 1)
			release := make(chan struct{})
			var mu sync.Mutex
			n := 0
			llmAPI := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				mu.Lock()
				n++
				first := n == 1
				mu.Unlock()
				if answered && first {
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","content":[{"type":"tool_use","id":"c1","name":"block_list","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5}}`)
					return
				}
				select {
				case arrived <- struct{}{}:
				default:
				}
				<-release
			}))
			defer llmAPI.Close()
			defer close(release)
			dir := t.TempDir()
			clock := newClock(wakeT0)
			k := openAt(t, dir, kerneltest.Scripted(t, wakeScript(0, 0)), clock)
			if _, err := k.Blocks().WriteAt(context.Background(), "wake", kerneltest.At(t, "0.5.1"), "webhook ci tier 1: check the build"); err != nil {
				t.Fatal(err)
			}
			if _, err := k.Wakes().Webhook(context.Background(), "ci", []byte(`{"build":9}`)); err != nil {
				t.Fatal(err)
			}
			k.Close()

			killMidCall(t, dir, wakeT0, llmAPI.URL, arrived)

			p := kerneltest.Scripted(t, wakeScript(1, 0))
			k2 := openAt(t, dir, p, clock)
			clock.Add(time.Minute)
			r := pass(t, k2)
			all, _ := k2.Wakes().List(context.Background(), 0, 0)
			killed := all[len(all)-1]
			if killed.Status != store.WakeInterrupted {
				t.Fatalf("the killed wake: %+v", killed)
			}
			if answered {
				if len(r.Wakes) != 0 || strings.Contains(killed.Reply, "delivered again") {
					t.Fatalf("a post the model had answered was carried again: %+v; %q", r.Wakes, killed.Reply)
				}
				return
			}
			if statuses(r) != "woke" || !strings.Contains(killed.Reply, "delivered again") {
				t.Fatalf("the post of a wake killed before the model answered: %+v; %q", r.Wakes, killed.Reply)
			}
			if msgs := p.Requests()[0].Messages; !strings.Contains(msgs[len(msgs)-1].Text(), `{"build":9}`) {
				t.Fatalf("the next wake did not carry the post")
			}
		})
	}
}

// A watched page's change whose wake failed is not taken as seen: the
// next look finds it again and its wake carries it.
func TestAPageChangeWhoseWakeFailedIsCarriedByTheNextLook(t *testing.T) {
	page := "version one"
	var mu sync.Mutex
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		io.WriteString(w, page)
	}))
	defer site.Close()
	clock := newClock(wakeT0)
	api := &outage{down: true, inner: kerneltest.Scripted(t, wakeScript(1, 0))}
	k := openAt(t, t.TempDir(), api, clock, noRetryWait, func(o *kernel.Options) { o.WebRequest = fetch.Policy{Allow: []string{"127.0.0.1"}} })
	writeTriggers(t, k, "watch "+site.URL+"/news every 10m tier 1: what changed?")
	pass(t, k) // the first look
	mu.Lock()
	page = "version two: the news"
	mu.Unlock()
	clock.Add(10 * time.Minute)
	if r := pass(t, k); statuses(r) != "failed" {
		t.Fatalf("the change in the outage: %+v %v", r.Wakes, r.Errors)
	}
	api.set(false)
	clock.Add(10 * time.Minute)
	if r := pass(t, k); statuses(r) != "woke" || !strings.Contains(api.inner.Requests()[0].Messages[0].Text(), "version two: the news") {
		t.Fatalf("the next look after the outage: %+v %v", r.Wakes, r.Errors)
	}
	clock.Add(10 * time.Minute)
	if r := pass(t, k); len(r.Wakes) != 0 {
		t.Fatalf("the change was carried twice: %+v", r.Wakes)
	}
}

// A beach that accepts connections and never answers, and a watched page
// that does the same, hold up only their own looks: the rhythm after them
// in the wake block fires at once in the daemon's pass, and later passes
// go on; each look ends at its own deadline, and one pass for cron
// reports both as errors after running the rhythm.
func TestAHangingBeachOrPageHoldsUpOnlyItsOwnLook(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)
	ctx := context.Background()
	clock := newClock(wakeT0)
	k := openAt(t, t.TempDir(), respondAll(), clock, func(o *kernel.Options) {
		o.Beach = hang.URL
		o.WebRequest = fetch.Policy{Allow: []string{"127.0.0.1"}}
		o.WakeCaps.Wakes = 100
	})
	if _, err := k.Blocks().WriteAt(ctx, "wake", kerneltest.At(t, "0.4.3"), "every 1m tier 1: tick"); err != nil {
		t.Fatal(err)
	}
	pass(t, k) // the rhythm is first read: due in a minute
	writeTriggers(t, k, "inbox tier 1", "watch "+hang.URL+"/news every 5m tier 1: what changed?")
	clock.Add(time.Minute)

	woke := make(chan store.Wake, 10)
	rctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		k.Wakes().Run(rctx, 10*time.Millisecond, func(r *wakes.Report, err error) {
			if r != nil {
				for _, w := range r.Wakes {
					woke <- w
				}
			}
		})
	}()
	for want := range 2 { // the rhythm now, and a minute later
		select {
		case w := <-woke:
			if w.Where != "wake 0.4.3" || w.Status != store.WakeDone {
				t.Fatalf("a wake: %+v", w)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("wake %d of the rhythm waited for the looks (their deadline is %s)", want+1, wakes.PollTimeout())
		}
		clock.Add(time.Minute)
	}
	stop()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon did not stop: its looks went on")
	}

	// One pass for cron waits for its looks, each to its own deadline,
	// after the rhythm fired.
	defer wakes.SetPollTimeout(200 * time.Millisecond)()
	clock.Add(10 * time.Minute)
	r := pass(t, k)
	if statuses(r) != "woke" || len(r.Errors) != 2 || !strings.Contains(r.Errors[0], "polling the beach: no answer within 200ms") ||
		!strings.Contains(r.Errors[1], "no answer within 200ms") {
		t.Fatalf("one pass with a hanging beach and page: %+v %q", r.Wakes, r.Errors)
	}
}
