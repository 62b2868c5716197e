package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/beach"
	"github.com/llmkernels/kernels/hermitcrab/identity"
	"github.com/llmkernels/kernels/internal/pgtest"
)

// stopAtCleanup interrupts a started process when the test ends (unless
// the test reaped it) and fails the test unless it exits 0 within 30 s.
func stopAtCleanup(t *testing.T, cmd *exec.Cmd, what string) {
	t.Cleanup(func() {
		if cmd.ProcessState != nil {
			return // killed and reaped by the test
		}
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s did not stop cleanly: %v", what, err)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("%s did not stop within 30 s of Ctrl-C", what)
		}
	})
}

// startReading starts cmd, its standard error the test's, and returns its
// standard output; it is interrupted (and must exit 0) when the test ends.
func startReading(t *testing.T, cmd *exec.Cmd, what string) io.Reader {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopAtCleanup(t, cmd, what)
	return stdout
}

// serveBeach runs `hermitcrab beach serve` on a free loopback port and
// returns its URL; the server is interrupted when the test ends.
func serveBeach(t *testing.T, args ...string) string {
	url, _ := startBeachProcess(t, args...)
	return url
}

func startBeachProcess(t *testing.T, args ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"--data", t.TempDir(), "beach", "serve", "--addr", "127.0.0.1:0"}, args...)...)
	line, err := bufio.NewReader(startReading(t, cmd, "beach serve")).ReadString('\n')
	if err != nil {
		t.Fatalf("beach serve printed no URL: %v", err)
	}
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(line)
	if url == "" {
		t.Fatalf("no URL in %q", line)
	}
	return url, cmd
}

// A beach killed with SIGKILL in the middle of concurrent writes keeps
// every write it acknowledged, three times over.
func TestABeachKilledMidWriteKeepsEveryAcknowledgedWrite(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { killMidWrite(t, filepath.Join(t.TempDir(), "beach.db")) })
	t.Run("postgres", func(t *testing.T) { killMidWrite(t, pgtest.New(t)) })
}

func killMidWrite(t *testing.T, db string) {
	to, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	acked := map[string]bool{}
	for round := range 3 {
		url, cmd := startBeachProcess(t, "--db", db, "--addr-rate", "-1", "--agent-rate", "-1")
		var mu sync.Mutex
		var wg sync.WaitGroup
		var count atomic.Int64
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id, _ := identity.Generate()
				c, _ := beach.NewClient(url, id)
				for i := 0; ; i++ {
					content := fmt.Sprintf("round %d from %s #%d", round, id.Agent()[:8], i)
					if _, err := c.Send(context.Background(), beach.Message{To: to.Agent(), Type: beach.TypeGeneral, Content: content}); err != nil {
						return // the server is gone
					}
					mu.Lock()
					acked[content] = true
					mu.Unlock()
					count.Add(1)
				}
			}()
		}
		deadline := time.Now().Add(2 * time.Minute)
		for count.Load() < int64(50+round*37) { // a different point each round
			if time.Now().After(deadline) {
				t.Fatalf("round %d: only %d writes acknowledged in 2 minutes", round, count.Load())
			}
			time.Sleep(time.Millisecond)
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		wg.Wait()
	}
	url := serveBeach(t, "--db", db)
	c, _ := beach.NewClient(url, to)
	got := map[string]bool{}
	for {
		msgs, refused, err := c.Inbox(context.Background(), 500)
		if err != nil || len(refused) > 0 {
			t.Fatalf("inbox after the kills: %v %v", refused, err)
		}
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			got[m.Body.Content] = true
		}
	}
	for content := range acked {
		if !got[content] {
			t.Fatalf("an acknowledged message was lost to kill -9: %q (%d acknowledged, %d found)", content, len(acked), len(got))
		}
	}
	t.Logf("%d acknowledged writes over 3 kills, all found", len(acked))
}

// beachFlow runs two instances through a beach from the command line: A
// publishes and marks, B finds A by the URL, reads its passport and sends
// it a grain probe; A reads it once; A leaves a save point and restores it
// on a "new machine" with only its key. read is the beach B reads from
// (the same one, or a second server on the same PostgreSQL).
func beachFlow(t *testing.T, write, read string) {
	a, b := t.TempDir(), t.TempDir()
	idA, _ := mustHC(t, a, "", "beach", "id")
	idA = strings.TrimSpace(idA)
	if fi, err := os.Stat(filepath.Join(a, "identity.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	mustHC(t, a, "", "beach", "--beach", write, "passport", "publish", "--name", "alice", "--offer", "purpose 0", "--need", "stash 0")
	mustHC(t, a, "", "beach", "--beach", write, "mark", "https://example.org/pscale", "reading about pscale")

	marks, _ := mustHC(t, b, "", "beach", "--beach", read, "marks", " HTTPS://example.org/pscale")
	if !strings.Contains(marks, idA) || !strings.Contains(marks, "reading about pscale") {
		t.Fatalf("B does not find A's mark:\n%s", marks)
	}
	var marksJSON []struct {
		Agent string `json:"agent"`
		Body  struct {
			URLHash string `json:"url_hash"`
			Purpose string `json:"purpose"`
		} `json:"body"`
	}
	listed, _ := mustHC(t, b, "", "beach", "--beach", read, "marks", "https://example.org/pscale", "--json")
	if err := json.Unmarshal([]byte(listed), &marksJSON); err != nil || len(marksJSON) != 1 || marksJSON[0].Agent != idA ||
		marksJSON[0].Body.Purpose != "reading about pscale" || marksJSON[0].Body.URLHash == "" {
		t.Fatalf("marks --json: %v\n%s", err, listed)
	}
	listed, _ = mustHC(t, b, "", "beach", "--beach", read, "passport", "list", "--json")
	if !json.Valid([]byte(listed)) || !strings.Contains(listed, `"name": "alice"`) {
		t.Fatalf("passport list --json:\n%s", listed)
	}
	passport, _ := mustHC(t, b, "", "beach", "--beach", read, "passport", "show", idA)
	// The offer and need are nodes of A's blocks, published with their
	// text, as the passport_publish tool publishes them.
	if !strings.Contains(passport, `"name": "alice"`) || !strings.Contains(passport, `"purpose 0: Your purpose at every timescale`) ||
		!strings.Contains(passport, `"stash 0: Notes for your future self`) {
		t.Fatalf("A's passport as B reads it:\n%s", passport)
	}
	mustHC(t, b, "", "beach", "--beach", read, "send", idA, "shall we trade?", "--type", "grain_probe", "--spindle", "purpose 0")
	inbox, _ := mustHC(t, a, "", "beach", "--beach", write, "inbox")
	if !strings.Contains(inbox, "shall we trade?") || !strings.Contains(inbox, "grain_probe") || !strings.Contains(inbox, `"spindle": "purpose 0: Your purpose at every timescale`) {
		t.Fatalf("A's inbox:\n%s", inbox)
	}
	if again, _ := mustHC(t, a, "", "beach", "--beach", write, "inbox"); strings.TrimSpace(again) != "[]" {
		t.Fatalf("A's inbox the second time:\n%s", again)
	}

	// Save point: A's blocks, restored on a new machine with only the key.
	mustHC(t, a, "", "blocks", "list")
	mustHC(t, a, "", "beach", "--beach", write, "save")
	fresh := t.TempDir()
	key, _ := os.ReadFile(filepath.Join(a, "identity.key"))
	if err := os.WriteFile(filepath.Join(fresh, "identity.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	// Setting the beach first (the new directory's first command) leaves
	// it a new instance: the restore writes every block.
	mustHC(t, fresh, "", "beach", "use", read)
	out, _ := mustHC(t, fresh, "", "beach", "restore")
	if !strings.Contains(out, "9 blocks written") {
		t.Fatalf("restore: %s", out)
	}
	want, _ := mustHC(t, a, "", "blocks", "export")
	got, _ := mustHC(t, fresh, "", "blocks", "export")
	if got != want {
		t.Fatal("the restored blocks differ from the saved ones")
	}
	// B has no save point, and cannot fetch A's.
	if _, errOut, err := hc(t, b, "", "beach", "--beach", read, "restore"); err == nil || !strings.Contains(errOut, "no save point") {
		t.Fatalf("B's restore: %v %s", err, errOut)
	}
}

func TestBeachFromTheCommandLine(t *testing.T) {
	url := serveBeach(t)
	beachFlow(t, url, url)

	// An envelope signed by `beach sign` is accepted once; the Host rule
	// holds for the served beach.
	d := t.TempDir()
	env, _ := mustHC(t, d, "", "beach", "sign", "passport", `{"name":"signed by hand"}`)
	if _, _, err := hc(t, d, "", "beach", "sign", "message", `{"to":"nobody","type":"general","content":"x"}`); err == nil {
		t.Fatal("beach sign accepted a message to a non-agent")
	}
	post := func(host string) string {
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/passports", strings.NewReader(env))
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return string(out)
	}
	if out := post("evil.example"); !strings.Contains(out, "start the server allowing the host name evil.example") {
		t.Fatalf("foreign Host: %s", out)
	}
	if out := post("localhost"); !strings.Contains(out, `"nonce"`) {
		t.Fatalf("signed passport: %s", out)
	}
	if out := post("localhost"); !strings.Contains(out, "replayed") {
		t.Fatalf("the same envelope again: %s", out)
	}
}

// A shared beach: two servers on one PostgreSQL database; what is written
// through one is read through the other.
func TestTwoBeachServersShareOnePostgreSQL(t *testing.T) {
	db := pgtest.New(t)
	one, two := serveBeach(t, "--db", db), serveBeach(t, "--db", db)
	beachFlow(t, one, two)
}

// `beach inbox --after ID` fetches the messages above ID, read or not,
// and nothing else: it must not first take the unread ones (which would
// mark them read and remember their nonces, so the fetch that follows
// refuses them as replays and they are lost).
func TestInboxAfterFetchesUnreadMessagesWithoutLosingThem(t *testing.T) {
	url := serveBeach(t)
	a, b := t.TempDir(), t.TempDir()
	idA, _ := mustHC(t, a, "", "beach", "id")
	idA = strings.TrimSpace(idA)
	mustHC(t, b, "", "beach", "--beach", url, "send", idA, "first")
	mustHC(t, b, "", "beach", "--beach", url, "send", idA, "second")
	out, errOut := mustHC(t, a, "", "beach", "--beach", url, "inbox", "--after", "0")
	if !strings.Contains(out, "first") || !strings.Contains(out, "second") || strings.Contains(errOut, "refused") {
		t.Fatalf("inbox --after 0 with two unread messages:\n%s\n%s", out, errOut)
	}
	// They were handed out (and are now read): a plain inbox is empty.
	if again, _ := mustHC(t, a, "", "beach", "--beach", url, "inbox"); strings.TrimSpace(again) != "[]" {
		t.Fatalf("inbox after --after:\n%s", again)
	}
}

// What a hostile peer signs, or a hostile beach says, is text from a
// stranger: printed as lines on a terminal it must not carry escape
// sequences (which can retitle the window, rewrite the screen, or worse)
// nor line breaks (which forge lines: a "verified" mark by someone else).
func TestPeerTextReachesTheTerminalInert(t *testing.T) {
	url := serveBeach(t)
	ctx := context.Background()
	evil, _ := identity.Generate()
	c, _ := beach.NewClient(url, evil)
	forged := "hc" + strings.Repeat("a", 52) + "  endorsed by this agent"
	if _, err := c.PublishPassport(ctx, beach.Passport{Name: "evil\x1b]0;pwned\x07\u009b2J\n" + forged, Offers: []string{"0.1\r\x1b[1A"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mark(ctx, "https://example.org/", "reading\n2026-01-01T00:00:00Z  "+forged+"\u202e"); err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	list, _ := mustHC(t, d, "", "beach", "--beach", url, "passport", "list")
	marks, _ := mustHC(t, d, "", "beach", "--beach", url, "marks", "https://example.org/")
	for name, out := range map[string]string{"passport list": list, "marks": marks} {
		if strings.ContainsAny(out, "\x1b\x07\r\u009b\u202e") || strings.Count(out, "\n") != 1 {
			t.Errorf("%s printed control characters or extra lines:\n%q", name, out)
		}
	}
	// JSON output escapes C0 controls itself, but not C1 controls (U+009B
	// is CSI) nor bidirectional overrides.
	show, _ := mustHC(t, d, "", "beach", "--beach", url, "passport", "show", evil.Agent())
	if strings.ContainsAny(show, "\x1b\x07\u009b\u202e") || !strings.Contains(show, `\u009b2J`) {
		t.Errorf("passport show printed control characters:\n%s", show)
	}
	var shown struct{ Body beach.Passport }
	if err := json.Unmarshal([]byte(show), &shown); err != nil || !strings.HasPrefix(shown.Body.Name, "evil\x1b]0;pwned\x07\u009b2J\n") {
		t.Errorf("passport show is not the passport as JSON: %v %q", err, shown.Body.Name)
	}
	// A beach's refusal is text from the beach: the same holds.
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"no\u001b[2J\u001b]0;pwned\u0007\nError: your key was revoked","reason":"x\u001b[31m"}`)
	}))
	defer hostile.Close()
	_, errOut, err := hc(t, d, "", "beach", "--beach", hostile.URL, "passport", "list")
	if err == nil || strings.ContainsAny(errOut, "\x1b\x07") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("a hostile beach's refusal reached the terminal raw (%v):\n%q", err, errOut)
	}
	// So is its acknowledgement of what this instance published or marked.
	acking := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"agent":"hc\u001b]0;pwned\u0007","time":"now\u009b2J\u202e","nonce":"n"}`)
	}))
	defer acking.Close()
	for _, args := range [][]string{{"passport", "publish", "--name", "me"}, {"mark", "https://example.org/", "reading"}} {
		out, errOut, err := hc(t, d, "", append([]string{"beach", "--beach", acking.URL}, args...)...)
		if err != nil || strings.ContainsAny(out+errOut, "\x1b\x07\u009b\u202e") || !strings.Contains(out, `hc\x1b]0;pwned\a`) {
			t.Errorf("beach %v printed a hostile beach's acknowledgement raw (%v):\n%q\n%q", args, err, out, errOut)
		}
	}
}

// `beach serve` names its database on start; a PostgreSQL password given
// in the URL's query (?password=, which pgx reads) is not printed.
func TestBeachServeDoesNotPrintThePassword(t *testing.T) {
	u, err := neturl.Parse(pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	u.User = neturl.User(u.User.Username())
	q := u.Query()
	q.Set("password", password)
	u.RawQuery = q.Encode()
	cmd := exec.Command(binary, "--data", t.TempDir(), "beach", "serve", "--addr", "127.0.0.1:0", "--db", u.String())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
	if !strings.Contains(line, "beach serving") || strings.Contains(line+stderr.String(), password) {
		t.Fatalf("beach serve printed:\n%s%s", line, stderr.String())
	}
}

// Mistakes on the command line are usage errors (exit 2), found before
// anything is sent; offers, needs and spindles are checked as the
// instance's own tools check them (nodes of its blocks), before anything
// is sent.
func TestBeachCommandLineMistakesSendNothing(t *testing.T) {
	var requests atomic.Int64
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusTeapot)
	}))
	defer counting.Close()
	someone, _ := identity.Generate()
	d := t.TempDir()
	exit := func(err error) int {
		if e, ok := err.(*exec.ExitError); ok {
			return e.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	}
	for _, c := range []struct {
		args []string
		want int
		says string
	}{
		{[]string{"beach", "--beach", counting.URL, "send", someone.Agent(), "hi", "--type", "bogus"}, 2, "grain_probe, grain_response or general"},
		{[]string{"beach", "--beach", "127.0.0.1:8421", "marks", "https://example.org/"}, 2, "--beach"},
		{[]string{"blocks", "list", "--beach", "ftp://example.org"}, 2, "want http://host[:port]"},
		{[]string{"beach", "use", "example.org"}, 2, "want http://host[:port]"},
		{[]string{"beach", "--beach", counting.URL, "passport", "publish", "--name", "a", "--offer", "purpose 0.2"}, 1, "digit 2 not present"},
		{[]string{"beach", "--beach", counting.URL, "passport", "publish", "--name", "a", "--need", "purpose"}, 1, "BLOCK ADDRESS"},
		{[]string{"beach", "--beach", counting.URL, "send", someone.Agent(), "hi", "--spindle", "nosuch 0"}, 1, "nosuch"},
	} {
		_, errOut, err := hc(t, d, "", c.args...)
		if got := exit(err); got != c.want || !strings.Contains(errOut, c.says) {
			t.Errorf("%v: exit %d, want %d, saying %q:\n%s", c.args, got, c.want, c.says, errOut)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests reached the beach", n)
	}
	cmd := exec.Command(binary, "--data", d, "beach", "marks", "https://example.org/")
	cmd.Env = append(os.Environ(), "HERMITCRAB_BEACH=localhost:8421")
	out, err := cmd.CombinedOutput()
	if exit(err) != 2 || !strings.Contains(string(out), "$HERMITCRAB_BEACH") {
		t.Fatalf("a HERMITCRAB_BEACH that is not a URL: %v\n%s", err, out)
	}
}

// A server at --beach that is no beach (a web server's 404 page) gets one
// line that says so and names the fix, never its HTML.
func TestAServerThatIsNoBeachIsSaidInOneLine(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "<!DOCTYPE HTML>\n<html>\n<body><h1>Error response</h1>\n<p>Error code: 404</p></body>\n</html>\n")
	}))
	defer web.Close()
	_, errOut, err := hc(t, t.TempDir(), "", "beach", "--beach", web.URL, "marks", "https://example.org/")
	want := "hermitcrab: " + web.URL + " is not a beach: GET /v1/marks answered HTTP 404 without a beach's JSON error (check the beach URL)\n"
	if e, ok := err.(*exec.ExitError); !ok || e.ExitCode() != 1 || errOut != want {
		t.Fatalf("exit %v, stderr %q, want %q", err, errOut, want)
	}
}

// A PostgreSQL URL whose password holds an unescaped # is refused before
// any dial, in one line that names the URL once and the fix.
func TestAnUnescapedPasswordIsRefusedBeforeAnyDial(t *testing.T) {
	_, errOut, err := hc(t, t.TempDir(), "", "beach", "serve", "--addr", "127.0.0.1:0", "--db", "postgres://me:p#ss@127.0.0.1:1/db")
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if e, ok := err.(*exec.ExitError); !ok || e.ExitCode() != 2 || len(lines) != 2 || strings.Count(errOut, "postgres://") != 1 ||
		!strings.Contains(lines[0], "write # ? % @ / : as %23") || strings.Contains(errOut, "dial") || strings.Contains(errOut, "p#ss") {
		t.Fatalf("exit %v, stderr:\n%s", err, errOut)
	}
}

// 'beach use URL' as a new data directory's first command creates its
// store without blocks; the directory is still a new instance: blocks
// list shows the default shell and the prompt is the default one.
func TestBeachUseFirstKeepsTheDefaultShell(t *testing.T) {
	fresh, used := t.TempDir(), t.TempDir()
	mustHC(t, used, "", "beach", "use", "http://127.0.0.1:9")
	if u, _ := mustHC(t, used, "", "beach", "use"); strings.TrimSpace(u) != "http://127.0.0.1:9" {
		t.Fatalf("beach use printed %q", u)
	}
	for _, args := range [][]string{{"blocks", "list"}, {"prompt", "--tier", "3"}, {"blocks", "export"}} {
		want, _ := mustHC(t, fresh, "", args...)
		got, _ := mustHC(t, used, "", args...)
		if got != want {
			t.Errorf("%v after beach use (%d characters) differs from a new directory's (%d):\n%.300s", args, len(got), len(want), got)
		}
	}
	// The first command that writes blocks stores the shell.
	written := t.TempDir()
	mustHC(t, written, "", "beach", "use", "http://127.0.0.1:9")
	mustHC(t, written, "", "tools", "reset")
	if list, errOut := mustHC(t, written, "", "blocks", "list"); strings.Count(list, "\n") != 9 || strings.Contains(errOut, "no blocks") {
		t.Fatalf("blocks list after beach use and tools reset:\n%s%s", list, errOut)
	}
	// The reads wrote nothing: an import is still not mixed with the
	// default shell, as in a new directory.
	file := filepath.Join(t.TempDir(), "garden.json")
	if err := os.WriteFile(file, []byte(`{"place":1,"tree":{"0":{"_":"what grows"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	mustHC(t, used, "", "blocks", "import", file)
	if list, _ := mustHC(t, used, "", "blocks", "list"); strings.Count(list, "\n") != 1 || !strings.HasPrefix(list, "garden ") {
		t.Fatalf("blocks list after beach use and an import:\n%s", list)
	}
}

// A message the person reads with `beach inbox` reaches the instance too:
// the command takes it into the instance's store, where it waits for the
// model (reading it is not delivering it), so the next wake of the inbox
// trigger carries it even when the beach is gone by then.
func TestAMessageReadWithBeachInboxStillReachesTheModel(t *testing.T) {
	url, server := startBeachProcess(t)
	a := withTriggers(t, "inbox tier 1")
	b := t.TempDir()
	idA, _ := mustHC(t, a, "", "beach", "id")
	mustHC(t, b, "", "beach", "--beach", url, "send", strings.TrimSpace(idA), "are you there?")
	inbox, _ := mustHC(t, a, "", "beach", "--beach", url, "inbox")
	if !strings.Contains(inbox, "are you there?") {
		t.Fatalf("beach inbox:\n%s", inbox)
	}
	if err := server.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = server.Wait()
	out, _ := mustHC(t, a, "", "--beach", url, "--provider", "script", "--script", replyScript(t, 1), "wake")
	if !strings.Contains(out, "1 message(s)") || !strings.Contains(out, "reply 1") {
		t.Fatalf("the wake after beach inbox did not carry the message:\n%s", out)
	}
	// Delivered once: the next wake has nothing to carry.
	if again, _ := mustHC(t, a, "", "--beach", url, "--provider", "script", "--script", replyScript(t, 0), "wake"); strings.Contains(again, "message(s)") {
		t.Fatalf("the message was carried twice:\n%s", again)
	}
	// --all lists it still, delivered as it is now.
	if all, _ := mustHC(t, a, "", "--beach", url, "beach", "inbox", "--all"); !strings.Contains(all, "are you there?") {
		t.Fatalf("beach inbox --all:\n%s", all)
	}
}
