package wakes_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/fetch"
	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/hermitcrab/wakes"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/anthropic"
	"github.com/llmkernels/kernels/llm/llmtest"
	"github.com/llmkernels/kernels/llm/script"
)

// t0 is a fixed time for the injected clock.
var wakeT0 = time.Date(2026, 11, 3, 12, 0, 0, 0, time.Local)

// wakeScript answers n wakes with a short reply each; cost, when above
// 0, is each reply's price in dollars on the light tier's model
// (claude-haiku-4-5 bills $1 per million input tokens).
func wakeScript(n int, cost float64) string {
	usage := ""
	if cost > 0 {
		usage = fmt.Sprintf(`,"usage":{"input_tokens":%d,"output_tokens":0}`, int(cost*1e6))
	}
	var b strings.Builder
	b.WriteString(`{"responses":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"content":[{"type":"text","text":"wake reply %d"}]%s}`, i+1, usage)
	}
	b.WriteString(`]}`)
	return b.String()
}

// openAt opens a ready kernel in dir with the scripted provider p and the
// clock.
func openAt(t *testing.T, dir string, p llm.Provider, clock *testClock, tune ...func(*kernel.Options)) *kernel.Kernel {
	t.Helper()
	o := kernel.Options{Client: &llm.Client{Provider: p}, ServerTools: true}
	for _, f := range tune {
		f(&o)
	}
	k := kerneltest.OpenIn(t, dir, o)
	k.Wakes().SetClock(clock.Now)
	return k
}

// writeTriggers writes lines at wake 0.4.1…, then 0.5.1… for the rest
// beyond nine.
func writeTriggers(t *testing.T, k *kernel.Kernel, lines ...string) {
	t.Helper()
	for i, l := range lines {
		path := fmt.Sprintf("0.4.%d", i+1)
		if i >= 9 {
			path = fmt.Sprintf("0.5.%d", i-8)
		}
		if _, err := k.Blocks().WriteAt(context.Background(), "wake", kerneltest.At(t, path), l); err != nil {
			t.Fatal(err)
		}
	}
}

func pass(t *testing.T, k *kernel.Kernel) *wakes.Report {
	t.Helper()
	r, err := k.Wakes().RunTriggers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func statuses(r *wakes.Report) string {
	var s []string
	for _, w := range r.Wakes {
		s = append(s, w.Status)
	}
	return strings.Join(s, ",")
}

// A rhythm fires when due, once; its next due time is stored, so a new
// process carries on where the last stopped; a clock jumped a week ahead
// fires it once (saying what it missed) and keeps its phase; a clock set
// back an hour does not fire it again. What a wake does is saved: its
// reply in history, its turns in the conversation "wake".
func TestATimerFiresOnTimeOnceAndSurvivesARestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := newClock(wakeT0)
	p1 := kerneltest.Scripted(t, wakeScript(1, 0))
	k1 := openAt(t, dir, p1, clock)
	writeTriggers(t, k1, "every 1h tier 1: check stash")

	if r := pass(t, k1); len(r.Wakes) != 0 {
		t.Fatalf("fired when first read: %+v", r.Wakes)
	}
	clock.Set(wakeT0.Add(59 * time.Minute))
	if r := pass(t, k1); len(r.Wakes) != 0 {
		t.Fatalf("fired a minute early: %+v", r.Wakes)
	}
	clock.Set(wakeT0.Add(time.Hour))
	r := pass(t, k1)
	if statuses(r) != "woke" || r.Wakes[0].Tier != 1 || r.Wakes[0].Reply != "wake reply 1" {
		t.Fatalf("on time: %+v", r.Wakes)
	}
	req := p1.Requests()[0]
	if req.Model != "claude-haiku-4-5-20251001" || !strings.Contains(req.Messages[0].Text(), `[wake] wake 0.4.1 "every 1h tier 1: check stash" fired.`) ||
		!strings.Contains(req.Messages[0].Text(), "Your instruction: check stash") {
		t.Fatalf("the wake's request: %s %q", req.Model, req.Messages[0].Text())
	}
	if r := pass(t, k1); len(r.Wakes) != 0 {
		t.Fatalf("fired twice for one due time: %+v", r.Wakes)
	}
	if hist, _ := k1.Blocks().Raw(ctx, "history"); !strings.Contains(string(hist.Data), "wake reply 1") {
		t.Fatalf("the wake's reply is not in history: %s", hist.Data)
	}
	if conv, _ := k1.Conversation().Conversation(ctx, "wake"); len(conv) != 2 {
		t.Fatalf("the wake conversation holds %d messages", len(conv))
	}
	k1.Close()

	// A new process: the next due time was kept.
	p2 := kerneltest.Scripted(t, wakeScript(2, 0))
	k2 := openAt(t, dir, p2, clock)
	clock.Set(wakeT0.Add(90 * time.Minute))
	if r := pass(t, k2); len(r.Wakes) != 0 {
		t.Fatalf("fired after the restart before its time: %+v", r.Wakes)
	}
	clock.Set(wakeT0.Add(2 * time.Hour))
	if r := pass(t, k2); statuses(r) != "woke" {
		t.Fatalf("after the restart, on time: %+v", r.Wakes)
	}

	// The clock jumps a week ahead: one wake, saying what it missed.
	clock.Set(wakeT0.Add(2*time.Hour + 7*24*time.Hour + 30*time.Minute))
	r = pass(t, k2)
	if statuses(r) != "woke" || !strings.Contains(r.Wakes[0].Reason, "and 167 more due times passed") {
		t.Fatalf("after a week's jump: %+v", r.Wakes)
	}
	st, _ := k2.Wakes().Status(ctx)
	next := st.Triggers[0].NextDue
	if !next.After(clock.Now()) || next.Sub(wakeT0)%time.Hour != 0 {
		t.Fatalf("next due %s: not the rhythm's next time after now", next)
	}
	// The clock goes back an hour: nothing fires again.
	clock.Add(-time.Hour)
	if r := pass(t, k2); len(r.Wakes) != 0 {
		t.Fatalf("fired again after the clock went back: %+v", r.Wakes)
	}
	if all, _ := k2.Wakes().List(ctx, 0, 0); len(all) != 3 {
		t.Fatalf("%d wakes recorded, want 3", len(all))
	}
}

// Daily caps: the wake block's cap (lower than the person's) and the
// person's flag (lower than the block's) each stop wakes, recorded as
// skipped with the reason; a new day starts afresh.
func TestDailyCapsOnWakesSkipAndLog(t *testing.T) {
	for _, c := range []struct {
		name  string
		line  string
		flag  int
		allow int
	}{
		{"the wake block's cap", "cap 2 wakes a day", 0, 2},
		{"the person's cap", "cap 5 wakes a day", 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := newClock(wakeT0)
			k := openAt(t, t.TempDir(), kerneltest.Scripted(t, wakeScript(c.allow*2, 0)), clock, func(o *kernel.Options) { o.WakeCaps.Wakes = c.flag })
			writeTriggers(t, k, "every 1m tier 1: tick", c.line)
			pass(t, k)
			var got []string
			for range 4 {
				clock.Add(time.Minute)
				got = append(got, statuses(pass(t, k)))
			}
			want := strings.Repeat("woke,", c.allow) + strings.Repeat("skipped,", 4-c.allow)
			if strings.Join(got, ",")+"," != want {
				t.Fatalf("statuses %v, want %s", got, want)
			}
			all, _ := k.Wakes().List(context.Background(), 0, 0)
			if !strings.Contains(all[0].Reason, fmt.Sprintf("daily cap of %d wakes", c.allow)) {
				t.Fatalf("the skipped wake's reason: %q", all[0].Reason)
			}
			clock.Add(24 * time.Hour) // a new day
			if r := pass(t, k); statuses(r) != "woke" {
				t.Fatalf("the next day: %+v", r.Wakes)
			}
		})
	}
}

// The cost cap: a wake that would pass the day's budget (by what such a
// wake cost before) is skipped; a wake under way stops before a request
// its remaining budget cannot pay for.
func TestTheDailyCostCap(t *testing.T) {
	clock := newClock(wakeT0)
	k := openAt(t, t.TempDir(), kerneltest.Scripted(t, wakeScript(3, 0.03)), clock, func(o *kernel.Options) { o.WakeCaps.CostUSD = 0.05 })
	writeTriggers(t, k, "every 1m tier 1: tick")
	pass(t, k)
	clock.Add(time.Minute)
	if r := pass(t, k); statuses(r) != "woke" || r.Wakes[0].CostUSD < 0.029 {
		t.Fatalf("first wake: %+v", r.Wakes)
	}
	clock.Add(time.Minute)
	r := pass(t, k)
	if statuses(r) != "skipped" || !strings.Contains(r.Wakes[0].Reason, "$0.05 would be passed") {
		t.Fatalf("second wake: %+v", r.Wakes)
	}

	// A wake whose first answer spends the budget stops there.
	clock2 := newClock(wakeT0)
	k2 := openAt(t, t.TempDir(), kerneltest.Scripted(t, `{"responses":[
		{"content":[`+kerneltest.ToolUse("c1", "block_list", map[string]string{})+`],"usage":{"input_tokens":60000,"output_tokens":0}},
		{"content":[{"type":"text","text":"never sent"}]}]}`), clock2, func(o *kernel.Options) { o.WakeCaps.CostUSD = 0.05 })
	writeTriggers(t, k2, "every 1m tier 1: tick")
	pass(t, k2)
	clock2.Add(time.Minute)
	r = pass(t, k2)
	if statuses(r) != "woke" || !strings.Contains(r.Wakes[0].Reply, "budget") || r.Wakes[0].CostUSD < 0.059 {
		t.Fatalf("a wake over budget: %+v", r.Wakes)
	}
}

// A trigger storm: eighteen lines all due at once fire one after another
// up to the cap; the rest are skipped once each, and a second pass at the
// same time fires nothing.
func TestATriggerStormStopsAtTheCap(t *testing.T) {
	clock := newClock(wakeT0)
	p := kerneltest.Scripted(t, wakeScript(5, 0))
	k := openAt(t, t.TempDir(), p, clock, func(o *kernel.Options) { o.WakeCaps.Wakes = 5 })
	var lines []string
	for i := range 18 {
		lines = append(lines, fmt.Sprintf("every 1m tier 1: storm %d", i))
	}
	writeTriggers(t, k, lines...)
	pass(t, k)
	clock.Add(time.Minute)
	r := pass(t, k)
	if got := statuses(r); got != strings.TrimSuffix(strings.Repeat("woke,", 5)+strings.Repeat("skipped,", 13), ",") {
		t.Fatalf("the storm: %s", got)
	}
	if r := pass(t, k); len(r.Wakes) != 0 || p.Remaining() != 0 {
		t.Fatalf("a second pass: %+v (%d answers left)", r.Wakes, p.Remaining())
	}
}

// A wake block full of garbage: nothing fires, every bad line is
// reported, and the next boot prompt (the deep tier's) tells the instance
// which lines and why; the other tiers' prompts do not carry it on every
// call.
func TestUnreadableTriggerLinesAreReportedInTheNextPrompt(t *testing.T) {
	clock := newClock(wakeT0)
	p := kerneltest.Scripted(t, `{"responses":[{"content":[{"type":"text","text":"Hello."}]},{"content":[{"type":"text","text":"I will fix them."}]}]}`)
	k := openAt(t, t.TempDir(), p, clock)
	writeTriggers(t, k, "evry 6h tier 1", "every 10s", "daily 25:00", "watch ftp://x", "every 6h tier 9", "\x1b[2J", "cap lots")
	r := pass(t, k)
	if len(r.Wakes) != 0 || len(r.Problems) != 7 {
		t.Fatalf("wakes %+v, problems %v", r.Wakes, r.Problems)
	}
	for _, tier := range []int{1, 3} {
		if _, err := k.Conversation().Say(context.Background(), "terminal", "hello", conversation.CallOptions{Tier: tier}); err != nil {
			t.Fatal(err)
		}
	}
	if sys := p.Requests()[0].System[0].Text; strings.Contains(sys, "[wake triggers]") {
		t.Fatalf("a tier-1 call carries the trigger notice:\n%s", sys)
	}
	sys := p.Requests()[1].System[0].Text
	for _, want := range []string{"[wake triggers] The kernel cannot read these lines", `wake 0.4.1 "evry 6h tier 1": not a trigger`, "wake 0.4.3", "cap lots"} {
		if !strings.Contains(sys, want) {
			t.Fatalf("the prompt lacks %q:\n%s", want, sys)
		}
	}
}

// Webhook posts wait for one wake that carries them all; a post to a
// name no trigger has is refused.
func TestWebhookPostsWakeTheInstanceOnce(t *testing.T) {
	ctx := context.Background()
	clock := newClock(wakeT0)
	p := kerneltest.Scripted(t, wakeScript(1, 0))
	k := openAt(t, t.TempDir(), p, clock)
	writeTriggers(t, k, "every 1d tier 1: unrelated")
	if _, err := k.Blocks().WriteAt(ctx, "wake", kerneltest.At(t, "0.5.1"), "webhook ci tier 2: check the build"); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Wakes().Webhook(ctx, "other", []byte("x")); !errors.Is(err, wakes.ErrNoHook) {
		t.Fatalf("a post to an unknown hook: %v", err)
	}
	for i := range 3 {
		if _, err := k.Wakes().Webhook(ctx, "ci", []byte(fmt.Sprintf(`{"build":%d,"status":"failed"}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	r := pass(t, k)
	if statuses(r) != "woke" || r.Wakes[0].Tier != 2 {
		t.Fatalf("wakes %+v", r.Wakes)
	}
	msg := p.Requests()[0].Messages[0].Text()
	if !strings.Contains(msg, "3 authenticated POST(s) to /hooks/ci") || !strings.Contains(msg, `{"build":2,"status":"failed"}`) {
		t.Fatalf("the wake message: %s", msg)
	}
	if r := pass(t, k); len(r.Wakes) != 0 {
		t.Fatalf("the posts woke it twice: %+v", r.Wakes)
	}
}

// A watched page wakes the instance when its content changes, not on the
// first look or an unchanged one; it is fetched under the web policy, so
// a loopback page is refused unless allowed, and the refusal is recorded,
// not a wake.
func TestAWatchedPageWakesOnChange(t *testing.T) {
	var content atomic.Value
	content.Store("version one")
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, content.Load().(string)) }))
	defer site.Close()
	line := "watch " + site.URL + "/news every 1h tier 1: what changed?"

	clock := newClock(wakeT0)
	refused := openAt(t, t.TempDir(), kerneltest.Scripted(t, wakeScript(0, 0)), clock)
	writeTriggers(t, refused, line)
	r := pass(t, refused)
	if len(r.Wakes) != 0 || len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "loopback or private") {
		t.Fatalf("a loopback page under the default policy: %+v", r)
	}
	if st, _ := refused.Wakes().Status(context.Background()); !strings.Contains(st.Triggers[0].Error, "loopback or private") {
		t.Fatalf("the refusal is not recorded: %+v", st.Triggers)
	}

	p := kerneltest.Scripted(t, wakeScript(1, 0))
	k := openAt(t, t.TempDir(), p, clock, func(o *kernel.Options) { o.WebRequest = fetch.Policy{Allow: []string{"127.0.0.1"}} })
	writeTriggers(t, k, line)
	if r := pass(t, k); len(r.Wakes)+len(r.Errors) != 0 {
		t.Fatalf("the first look: %+v", r)
	}
	clock.Add(time.Hour)
	if r := pass(t, k); len(r.Wakes) != 0 {
		t.Fatalf("an unchanged page: %+v", r.Wakes)
	}
	content.Store("version two: the news")
	clock.Add(30 * time.Minute)
	if r := pass(t, k); len(r.Wakes) != 0 {
		t.Fatalf("fetched before its interval: %+v", r.Wakes)
	}
	clock.Add(30 * time.Minute)
	if r := pass(t, k); statuses(r) != "woke" || !strings.Contains(p.Requests()[0].Messages[0].Text(), "version two: the news") {
		t.Fatalf("a changed page: %+v", r.Wakes)
	}
	clock.Add(time.Hour)
	if r := pass(t, k); len(r.Wakes) != 0 {
		t.Fatalf("the same change woke it twice: %+v", r.Wakes)
	}
}

// A block left unchanged for the trigger's time wakes the instance once;
// unchanged for as long again, once more.
func TestAStaleBlockWakesTheInstance(t *testing.T) {
	clock := newClock(time.Now()) // blocks are stamped by the real clock
	k := openAt(t, t.TempDir(), kerneltest.Scripted(t, wakeScript(2, 0)), clock)
	writeTriggers(t, k, "stale stash after 1d tier 1: tidy it")
	if r := pass(t, k); len(r.Wakes) != 0 {
		t.Fatalf("fresh: %+v", r.Wakes)
	}
	clock.Add(25 * time.Hour)
	if r := pass(t, k); statuses(r) != "woke" {
		t.Fatalf("a day unchanged: %+v", r.Wakes)
	}
	if r := pass(t, k); len(r.Wakes) != 0 {
		t.Fatalf("again at once: %+v", r.Wakes)
	}
	clock.Add(25 * time.Hour)
	if r := pass(t, k); statuses(r) != "woke" {
		t.Fatalf("another day unchanged: %+v", r.Wakes)
	}
}

// Child processes of the tests below: the test binary run again with
// HC_WAKE_CHILD set opens the data directory HC_WAKE_DIR with the clock
// at HC_WAKE_NOW and its LLM at HC_WAKE_LLM, says "ready", waits for a
// line on standard input, runs one pass and prints its report as JSON.
func childMain() bool {
	if os.Getenv("HC_WAKE_CHILD") == "" {
		return false
	}
	now, err := time.Parse(time.RFC3339Nano, os.Getenv("HC_WAKE_NOW"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	p, err := anthropic.New(anthropic.Config{APIKey: "test-key", BaseURL: os.Getenv("HC_WAKE_LLM")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	k, err := kernel.Open(os.Getenv("HC_WAKE_DIR"), kernel.Options{Client: &llm.Client{Provider: p}, ServerTools: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	k.Wakes().SetClock(func() time.Time { return now })
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')
	r, err := k.Wakes().RunTriggers(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(r)
	k.Close()
	os.Exit(0)
	return true
}

// child starts the test binary as a child process on dir.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startChild(t *testing.T, dir string, now time.Time, llmURL string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "HC_WAKE_CHILD=1", "HC_WAKE_DIR="+dir, "HC_WAKE_NOW="+now.Format(time.RFC3339Nano), "HC_WAKE_LLM="+llmURL)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := &child{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	if l, err := c.out.ReadString('\n'); err != nil || strings.TrimSpace(l) != "ready" {
		t.Fatalf("child: %q %v", l, err)
	}
	return c
}

// killMidCall runs a pass in a child process on dir, with the clock at
// now and its LLM at llmURL, and kills it (SIGKILL) once a request it
// made has arrived.
func killMidCall(t *testing.T, dir string, now time.Time, llmURL string, arrived <-chan struct{}) {
	t.Helper()
	c := startChild(t, dir, now, llmURL)
	io.WriteString(c.stdin, "go\n")
	select {
	case <-arrived:
	case <-time.After(2 * time.Minute):
		t.Fatal("the child's wake never reached the LLM")
	}
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait()
}

// Several OS processes share one data directory and check the same due
// time at the same moment: it fires once, and the LLM is called once.
func TestTwoProcessesNeverFireOneDueTimeTwice(t *testing.T) {
	s, err := script.Parse([]byte(wakeScript(20, 0)))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(s)
	defer srv.Close()
	dir := t.TempDir()
	clock := newClock(wakeT0)
	k := openAt(t, dir, kerneltest.Scripted(t, wakeScript(0, 0)), clock)
	writeTriggers(t, k, "every 1h tier 1: check stash", "every 2h tier 1: reflect")
	pass(t, k) // the triggers are first read: due in an hour and in two
	k.Close()

	total := 0
	for round := 1; round <= 4; round++ {
		now := wakeT0.Add(time.Duration(round) * time.Hour)
		var children []*child
		for range 4 {
			children = append(children, startChild(t, dir, now, srv.URL))
		}
		for _, c := range children { // all at once
			io.WriteString(c.stdin, "go\n")
		}
		woke := 0
		for _, c := range children {
			var r wakes.Report
			if err := json.NewDecoder(c.out).Decode(&r); err != nil {
				t.Fatalf("round %d: a child's report: %v", round, err)
			}
			woke += len(r.Wakes)
			if err := c.cmd.Wait(); err != nil {
				t.Fatalf("round %d: child: %v", round, err)
			}
		}
		want := 1 + (round+1)%2 // the 2h rhythm is due on even rounds
		if woke != want {
			t.Fatalf("round %d: %d wakes among the processes, want %d", round, woke, want)
		}
		total += want
		if got := len(srv.Received()); got != total {
			t.Fatalf("round %d: the LLM was called %d times, want %d", round, got, total)
		}
	}
}

// A process killed with SIGKILL in the middle of a wake's call: the next
// pass finds the wake lock free (a live wake holds it from its claim to
// its end), so it marks the wake interrupted; the cap counts it, and the
// trigger goes on at its next due time.
func TestAWakeKilledMidCallIsMarkedInterrupted(t *testing.T) {
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		<-release
	}))
	defer hang.Close()
	defer close(release)
	dir := t.TempDir()
	clock := newClock(wakeT0)
	k := openAt(t, dir, kerneltest.Scripted(t, wakeScript(0, 0)), clock)
	writeTriggers(t, k, "every 1h tier 1: check stash")
	pass(t, k)
	k.Close()

	killMidCall(t, dir, wakeT0.Add(time.Hour), hang.URL, arrived)

	p := kerneltest.Scripted(t, wakeScript(1, 0))
	k2 := openAt(t, dir, p, clock)
	clock.Set(wakeT0.Add(61 * time.Minute))
	if r := pass(t, k2); len(r.Wakes) != 0 {
		t.Fatalf("the killed wake's due time fired again: %+v", r.Wakes)
	}
	all, _ := k2.Wakes().List(context.Background(), 0, 0)
	if len(all) != 1 || all[0].Status != store.WakeInterrupted {
		t.Fatalf("the next pass, with the wake lock free: %+v", all)
	}
	clock.Set(wakeT0.Add(2*time.Hour + time.Minute))
	r := pass(t, k2)
	all, _ = k2.Wakes().List(context.Background(), 0, 0)
	if statuses(r) != "woke" || len(all) != 2 || all[1].Status != store.WakeInterrupted {
		t.Fatalf("at the next due time: pass %+v, wakes %+v", r.Wakes, all)
	}
	if st, _ := k2.Wakes().Status(context.Background()); st.Today.Wakes != 2 {
		t.Fatalf("the interrupted wake does not count against the cap: %+v", st.Today)
	}
}

// BenchmarkIdleTriggerPass is one pass over a wake block of nine rhythms
// none of which is due and a webhook trigger with no post: what a running
// kernel spends every 15 s between wakes.
func BenchmarkIdleTriggerPass(b *testing.B) {
	clock := newClock(wakeT0)
	k, err := kernel.Open(b.TempDir(), kernel.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	k.Wakes().SetClock(clock.Now)
	ctx := context.Background()
	if err := k.Ready(ctx); err != nil {
		b.Fatal(err)
	}
	for i := range 9 {
		if _, err := k.Blocks().WriteAt(ctx, "wake", kerneltest.At(b, fmt.Sprintf("0.4.%d", i+1)), fmt.Sprintf("every %dh tier 1: rhythm %d", i+1, i)); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := k.Blocks().WriteAt(ctx, "wake", kerneltest.At(b, "0.5.1"), "webhook ci tier 1"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		r, err := k.Wakes().RunTriggers(ctx)
		if err != nil || len(r.Wakes) != 0 {
			b.Fatal(r, err)
		}
	}
}

// A watched page on a loopback or private address is refused, like
// fetch_url (package fetch: also at a redirect's hop): no wake, the
// refusal recorded, and the target never reached.
func TestAWatchedPageIntoLoopbackIsRefused(t *testing.T) {
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("the secret"))
	}))
	t.Cleanup(target.Close)
	clock := newClock(wakeT0)
	k := openAt(t, t.TempDir(), kerneltest.Scripted(t, wakeScript(0, 0)), clock)
	writeTriggers(t, k, "watch "+target.URL+"/secret every 1h tier 1: what changed?")
	r := pass(t, k)
	if len(r.Wakes) != 0 || len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "loopback or private") || hits.Load() != 0 {
		t.Fatalf("wakes %+v, errors %v, loopback hits %d", r.Wakes, r.Errors, hits.Load())
	}
}

// Without an LLM client (serve before the person gave a key) nothing is
// claimed: the due time waits and fires once the key comes.
func TestTriggersWaitForAnAPIKey(t *testing.T) {
	clock := newClock(wakeT0)
	k := openAt(t, t.TempDir(), kerneltest.Scripted(t, wakeScript(1, 0)), clock)
	writeTriggers(t, k, "every 1h tier 1: check stash")
	pass(t, k)
	client := k.Conversation().Client()
	k.Conversation().SetClient(nil)
	clock.Add(time.Hour)
	if r := pass(t, k); len(r.Wakes) != 0 || len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "no LLM client") {
		t.Fatalf("without a client: %+v", r)
	}
	k.Conversation().SetClient(client)
	if r := pass(t, k); statuses(r) != "woke" {
		t.Fatalf("once the key came: %+v", r)
	}
}

// A time of day fires once a day: not again when the clock goes back an
// hour after it fired, once after a week's jump.
func TestADailyTriggerAcrossClockJumps(t *testing.T) {
	day := time.Date(2026, 11, 3, 8, 0, 0, 0, time.UTC)
	clock := newClock(day)
	k := openAt(t, t.TempDir(), kerneltest.Scripted(t, wakeScript(2, 0)), clock)
	writeTriggers(t, k, "daily 09:00 UTC tier 2: plan the day")
	pass(t, k)
	clock.Set(day.Add(time.Hour))
	if r := pass(t, k); statuses(r) != "woke" || r.Wakes[0].Tier != 2 {
		t.Fatalf("at nine: %+v", r.Wakes)
	}
	clock.Set(day.Add(30 * time.Minute)) // back to 08:30
	if r := pass(t, k); len(r.Wakes) != 0 {
		t.Fatalf("after the clock went back: %+v", r.Wakes)
	}
	clock.Set(day.Add(7*24*time.Hour + 2*time.Hour)) // a week later, 10:00
	r := pass(t, k)
	if statuses(r) != "woke" || !strings.Contains(r.Wakes[0].Reason, "and 6 more due times passed") {
		t.Fatalf("a week later: %+v", r.Wakes)
	}
	if r := pass(t, k); len(r.Wakes) != 0 {
		t.Fatalf("twice in a day: %+v", r.Wakes)
	}
}

// wake status gives today's wakes' tokens as billed, from which the share
// read from the prompt cache is shown; a call made outside a wake (chat)
// is not counted among them.
func TestStatusShowsTheWakesUsageWithTheCacheShare(t *testing.T) {
	clock := newClock(wakeT0)
	p := kerneltest.Scripted(t, `{"responses":[
		{"content":[{"type":"text","text":"wake reply"}],"usage":{"input_tokens":100,"output_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":700}},
		{"content":[{"type":"text","text":"chat reply"}],"usage":{"input_tokens":5000,"output_tokens":10}}]}`)
	k := openAt(t, t.TempDir(), p, clock)
	writeTriggers(t, k, "every 1m tier 1: tick")
	pass(t, k)
	clock.Add(time.Minute)
	if r := pass(t, k); statuses(r) != "woke" {
		t.Fatalf("the wake: %+v", r.Wakes)
	}
	if _, err := k.Conversation().Say(context.Background(), "terminal", "hello", conversation.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := k.Wakes().Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	u := s.Today.Usage
	want := llm.Usage{InputTokens: 100, OutputTokens: 10, CacheCreationInputTokens: 200, CacheReadInputTokens: 700}
	if u.Calls != 1 || u.Tokens != want || u.Tokens.CacheReadShare() != 0.7 || u.CostUSD <= 0 {
		t.Fatalf("today's wakes' usage: %+v", u)
	}
}
