package fetch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/llm"
)

// runTool runs one of the fetcher's tools as the loop would and returns its
// output; a handler error becomes the is_error text the LLM would see.
func runTool(t *testing.T, k *Fetcher, name string, input string) llm.ToolOutput {
	t.Helper()
	for _, h := range k.Tools() {
		if h.Tool.Name != name {
			continue
		}
		out, err := h.Run(context.Background(), json.RawMessage(input))
		if err != nil {
			return llm.ErrorOutput(err.Error())
		}
		return out
	}
	t.Fatalf("no tool %s", name)
	return llm.ToolOutput{}
}

func TestWebRequestRefusesLoopbackUnlessAllowed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(r.Method + " ok"))
	}))
	defer srv.Close()
	input := `{"method":"post","url":"` + srv.URL + `/x","body":"{}"}`

	k := New(Policy{})
	for _, tool := range []string{"web_request", "fetch_url"} {
		if out := runTool(t, k, tool, input); !out.IsError || !strings.Contains(out.Content.Text, "loopback or private") {
			t.Fatalf("%s under the default policy: %+v", tool, out)
		}
	}
	allowed := New(Policy{Allow: []string{"127.0.0.1"}})
	if out := runTool(t, allowed, "web_request", input); out.IsError || !strings.HasSuffix(out.Content.Text, "POST ok") {
		t.Fatalf("allowed host: %+v", out)
	}
	denied := New(Policy{Allow: []string{"127.0.0.1"}, Deny: []string{"127.0.0.1"}})
	if out := runTool(t, denied, "web_request", input); !out.IsError || !strings.Contains(out.Content.Text, "deny list") {
		t.Fatalf("deny wins: %+v", out)
	}
	listed := New(Policy{Allow: []string{"*.example.com"}})
	if out := runTool(t, listed, "web_request", `{"url":"https://other.org/"}`); !out.IsError || !strings.Contains(out.Content.Text, "not on the web_request allow list") {
		t.Fatalf("allow list restricts: %+v", out)
	}
}

func TestFetchURLTruncatesAt50000Characters(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(strings.Repeat("a", 60_000)))
	}))
	defer srv.Close()
	k := New(Policy{Allow: []string{"127.0.0.1"}})
	out := runTool(t, k, "fetch_url", `{"url":"`+srv.URL+`"}`)
	if out.IsError || !strings.HasPrefix(out.Content.Text, "HTTP 200 (text/plain)\n") || !strings.HasSuffix(out.Content.Text, "[truncated at 50000 characters]") {
		t.Fatalf("got %.60q…%.60q", out.Content.Text, out.Content.Text[len(out.Content.Text)-60:])
	}
	body := strings.TrimSuffix(strings.TrimPrefix(out.Content.Text, "HTTP 200 (text/plain)\n"), "\n[truncated at 50000 characters]")
	if n := len(body); n != 50_000 || strings.Trim(body, "a") != "" {
		t.Fatalf("kept %d characters", n)
	}
}

// redirectChain serves, on 127.0.0.2, /chain → /hop → http://127.0.0.1:T/secret,
// and /loop/N → /loop/N+1 for ever; it returns its base URL, the hits the
// loopback target at 127.0.0.1 took and the requests /loop/ took.
func redirectChain(t *testing.T) (string, *atomic.Int32, *atomic.Int32) {
	t.Helper()
	var hits, loops atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("the secret"))
	}))
	t.Cleanup(target.Close)
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no second loopback address to stand for a public host: %v", err)
	}
	r := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/chain":
			http.Redirect(w, r, "/hop", http.StatusFound)
		case r.URL.Path == "/hop":
			http.Redirect(w, r, target.URL+"/secret", http.StatusTemporaryRedirect)
		case strings.HasPrefix(r.URL.Path, "/loop/"):
			loops.Add(1)
			n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/loop/"))
			http.Redirect(w, r, fmt.Sprintf("/loop/%d", n+1), http.StatusFound)
		default:
			w.Write([]byte("public page"))
		}
	})}}
	r.Start()
	t.Cleanup(r.Close)
	return r.URL, &hits, &loops
}

// asPublic counts 127.0.0.2 as a public address, so that the redirector on
// it stands for a public site; every other address is classed as usual.
func asPublic(k *Fetcher) {
	k.private = func(ip net.IP) bool { return privateIP(ip) && !ip.Equal(net.ParseIP("127.0.0.2")) }
}

func TestARedirectChainIntoLoopbackIsRefusedUnderEveryPolicy(t *testing.T) {
	base, hits, _ := redirectChain(t)
	policies := []struct {
		name   string
		policy Policy
		says   string
	}{
		{"default", Policy{}, "loopback or private"},
		{"allow list without the target", Policy{Allow: []string{"127.0.0.2"}}, "not on the web_request allow list"},
		{"deny list with the target", Policy{Allow: []string{"127.0.0.2", "127.0.0.1"}, Deny: []string{"127.0.0.1"}}, "deny list"},
		{"deny list only", Policy{Deny: []string{"127.0.0.1"}}, "deny list"},
	}
	for _, pc := range policies {
		k := New(pc.policy)
		asPublic(k)
		if out := runTool(t, k, "fetch_url", `{"url":"`+base+`/"}`); out.IsError || !strings.Contains(out.Content.Text, "public page") {
			t.Fatalf("%s: the public page itself: %+v", pc.name, out)
		}
		for _, tool := range []string{"fetch_url", "web_request"} {
			out := runTool(t, k, tool, `{"url":"`+base+`/chain"}`)
			if !out.IsError || !strings.Contains(out.Content.Text, pc.says) {
				t.Errorf("%s, %s: %+v, want an error saying %q", pc.name, tool, out, pc.says)
			}
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback target was reached %d times", n)
	}
}

// A watched page (Get) on a "public" host that redirects into loopback is
// refused at the hop, like fetch_url, and the loopback target never reached.
func TestGetRefusesAPageRedirectingIntoLoopback(t *testing.T) {
	base, hits, _ := redirectChain(t)
	k := New(Policy{})
	asPublic(k)
	if _, err := k.Get(context.Background(), base+"/chain"); err == nil || !strings.Contains(err.Error(), "loopback or private") || hits.Load() != 0 {
		t.Fatalf("%v, loopback hits %d", err, hits.Load())
	}
}

func TestDenyWinsOnTheAddressDialledAndRedirectsAreCapped(t *testing.T) {
	base, hits, loops := redirectChain(t)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer target.Close()
	_, port, _ := net.SplitHostPort(target.Listener.Addr().String())
	k := New(Policy{Allow: []string{"localhost", "127.0.0.2"}, Deny: []string{"127.0.0.1"}})
	if out := runTool(t, k, "fetch_url", `{"url":"http://localhost:`+port+`/"}`); !out.IsError || !strings.Contains(out.Content.Text, "address 127.0.0.1 (of localhost) is on the web_request deny list") {
		t.Fatalf("a name allowed, its address denied: %+v", out)
	}
	if out := runTool(t, k, "fetch_url", `{"url":"`+base+`/loop/0"}`); !out.IsError || !strings.Contains(out.Content.Text, "stopped after 5 redirects") || loops.Load() != 6 {
		t.Fatalf("an endless redirect: %d requests, %+v", loops.Load(), out)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the denied address was reached %d times", n)
	}
}

func TestAddressesThatAreNotPublicAreRefusedHoweverSpelled(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "::1", "::ffff:127.0.0.1", "::7f00:1", "0.0.0.0", "0.1.2.3", "10.0.0.1", "172.16.0.1",
		"192.168.1.1", "169.254.169.254", "fe80::1", "fd00:ec2::254", "100.64.0.1", "100.100.100.200", "192.0.0.192",
		"198.18.0.1", "240.0.0.1", "255.255.255.255", "224.0.0.1", "fec0::1", "64:ff9b::a9fe:a9fe", "2002:c0a8:101::1", "::"} {
		if !privateIP(net.ParseIP(a)) {
			t.Errorf("%s counts as public", a)
		}
	}
	for _, a := range []string{"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "64:ff9b::5db8:d822", "1.1.1.1", "100.128.0.1"} {
		if privateIP(net.ParseIP(a)) {
			t.Errorf("%s counts as private", a)
		}
	}
}

func TestPolicyPatternsMatchHoweverWrittenAndNonsenseIsRefused(t *testing.T) {
	p := Policy{Deny: []string{"Evil.Example.", "[::1]", "0:0:0:0:0:0:0:1", "10.0.0.0/8", "*.Corp.Example"}}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"evil.example", "EVIL.example.", "::1", "10.9.8.7", "wiki.corp.example", "a.b.corp.example."} {
		if _, err := p.check(h); err == nil {
			t.Errorf("%s passes the deny list %v", h, p.Deny)
		}
	}
	for _, h := range []string{"example", "corp.example", "11.0.0.1", "notevil.example"} {
		if _, err := p.check(h); err != nil {
			t.Errorf("%s: %v", h, err)
		}
	}
	for _, bad := range []string{"localhost:8080", "http://intranet", "example.com/path", "", "a*.example.com", "user@host"} {
		if err := (Policy{Deny: []string{bad}}).Check(); err == nil {
			t.Errorf("the pattern %q was accepted; it matches no host", bad)
		}
		if e, ok := errors.AsType[*option.Error](Policy{Allow: []string{bad}}.Check()); !ok || e.Field != "web_allow" {
			t.Errorf("the allow pattern %q: %v", bad, e)
		}
	}
}

// TestEachRequestLeavesNoConnectionOpen: a kept-alive connection of a
// finished fetch is closed, so a long run of fetches holds no sockets.
func TestEachRequestLeavesNoConnectionOpen(t *testing.T) {
	var open atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	defer srv.Close()
	k := New(Policy{Allow: []string{"127.0.0.1"}})
	for range 20 {
		if out := runTool(t, k, "fetch_url", `{"url":"`+srv.URL+`/"}`); out.IsError {
			t.Fatal(out)
		}
	}
	// The server sees each close shortly after the client's: wait for it.
	for deadline := time.Now().Add(30 * time.Second); open.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := open.Load(); n != 0 {
		t.Fatalf("%d connections still open after 20 fetches", n)
	}
}
