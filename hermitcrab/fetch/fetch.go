// Package fetch is the instance's reach into the web: the web_request and
// fetch_url tools and the pages watch triggers look at, each request made
// under the person's host policy (Policy), every hop and every address
// dialled checked.
package fetch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/tool"
	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/llm"
)

// Policy says which hosts web_request and fetch_url may reach. Patterns
// are host names, IP addresses or CIDR networks ("10.0.0.0/8"), and
// "*.example.com" matches any subdomain; case, a trailing dot and IPv6
// brackets do not matter, and an IP matches however it is spelled. Deny
// always wins. With Allow empty every public host is reachable; with Allow
// set only the hosts it matches are. Addresses that are not public
// (loopback, private, link-local, shared CGNAT space, unspecified,
// reserved; see privateIP) are refused unless a host is allowed by name.
// Check refuses a pattern that cannot match anything (one with a port, a
// scheme or a path), so a deny list never silently guards nothing.
//
// Every hop is checked, redirects included, and on the address actually
// dialled: a redirect's host must pass the deny and allow lists like the
// first URL's; each connection's IP address must not be on the deny list,
// and must not be private unless the host being dialled is allowed by
// name, so a public name that resolves (or is rebound) to a private
// address is refused too. At most maxRedirects redirects are followed.
type Policy struct {
	Allow []string
	Deny  []string
}

// Limit is where an answer is cut, in characters, as the original proxy
// cut fetch_url.
const Limit = 50_000

// maxRedirects is how many redirects one request may follow.
const maxRedirects = 5

// Check says what is wrong with a pattern that can never match a host:
// an *option.Error whose field is web_allow or web_deny.
func (p Policy) Check() error {
	for _, list := range []struct {
		field    string
		patterns []string
	}{{"web_allow", p.Allow}, {"web_deny", p.Deny}} {
		for _, pat := range list.patterns {
			n := normalHost(pat)
			if _, _, err := net.ParseCIDR(n); err == nil || net.ParseIP(n) != nil {
				continue
			}
			if n == "" || strings.ContainsAny(n, ":/@?#[] ") || strings.Contains(strings.TrimPrefix(n, "*."), "*") {
				return option.Errorf(list.field, "%q: want a host name, *.domain, an IP address or a CIDR network (no scheme, port or path)", pat)
			}
		}
	}
	return nil
}

// normalHost is a host or pattern as matched: lower case, trimmed, without
// a trailing dot or IPv6 brackets, an IP in its canonical spelling.
func normalHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return h
}

func matchHost(patterns []string, host string) bool {
	host = normalHost(host)
	ip := net.ParseIP(host)
	for _, p := range patterns {
		p = normalHost(p)
		if p == host {
			return true
		}
		if _, network, err := net.ParseCIDR(p); err == nil {
			if ip != nil && network.Contains(ip) {
				return true
			}
			continue
		}
		if ok, _ := path.Match(p, host); ok && strings.HasPrefix(p, "*.") {
			return true
		}
	}
	return false
}

// check says whether host may be requested, and whether it may resolve to
// a private address (only when allowed by name).
func (p Policy) check(host string) (privateOK bool, err error) {
	if matchHost(p.Deny, host) {
		return false, fmt.Errorf("host %s is on the web_request deny list", host)
	}
	if len(p.Allow) > 0 && !matchHost(p.Allow, host) {
		return false, fmt.Errorf("host %s is not on the web_request allow list (%s)", host, strings.Join(p.Allow, ", "))
	}
	return matchHost(p.Allow, host), nil
}

// notPublic are the IPv4 and IPv6 networks, beyond what net.IP's own tests
// name, that no public host is on: "this network" (0/8, which Linux dials
// as loopback), shared CGNAT space (100.64/10: carrier and Tailscale
// networks, and some clouds' metadata services, such as 100.100.100.200),
// IETF protocol assignments (192.0.0/24), benchmarking (198.18/15),
// reserved (240/4, the broadcast address included) and the old IPv6
// site-local fec0::/10.
var notPublic = func() []*net.IPNet {
	var out []*net.IPNet
	for _, c := range []string{"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "240.0.0.0/4", "fec0::/10"} {
		_, n, err := net.ParseCIDR(c)
		if err != nil {
			panic(err)
		}
		out = append(out, n)
	}
	return out
}()

// privateIP says whether ip is not a public unicast address. An IPv4
// address carried in IPv6 (IPv4-mapped, IPv4-compatible, NAT64 64:ff9b::/96,
// 6to4 2002::/16) is judged as that IPv4 address.
func privateIP(ip net.IP) bool {
	if v4 := embeddedIPv4(ip); v4 != nil {
		ip = v4
	}
	if !ip.IsGlobalUnicast() || ip.IsPrivate() {
		return true
	}
	for _, n := range notPublic {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// embeddedIPv4 is the IPv4 address an IPv6 address carries, or nil.
func embeddedIPv4(ip net.IP) net.IP {
	if v4 := ip.To4(); v4 != nil {
		return v4
	}
	ip = ip.To16()
	if ip == nil {
		return nil
	}
	switch {
	case ip[0] == 0x20 && ip[1] == 0x02: // 6to4: 2002:AABB:CCDD::/48
		return net.IPv4(ip[2], ip[3], ip[4], ip[5])
	case bytesZero(ip[:12]) && !bytesZero(ip[12:14]): // IPv4-compatible ::a.b.c.d (not :: or ::1)
		return net.IPv4(ip[12], ip[13], ip[14], ip[15])
	case ip[0] == 0x00 && ip[1] == 0x64 && ip[2] == 0xff && ip[3] == 0x9b && bytesZero(ip[4:12]): // NAT64 64:ff9b::/96
		return net.IPv4(ip[12], ip[13], ip[14], ip[15])
	}
	return nil
}

func bytesZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// webClient makes one request's client: every connection it dials and
// every redirect it follows is checked against the policy (see Policy).
// private classifies addresses (privateIP; tests may count one loopback
// address as public, to stand for a public host).
func webClient(policy Policy, private func(net.IP) bool) *http.Client {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		privateOK, err := policy.check(host)
		if err != nil {
			return nil, err
		}
		d := &net.Dialer{Timeout: 10 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
			ipText, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			ip := net.ParseIP(ipText)
			switch {
			case ip == nil:
				return fmt.Errorf("dialling %q: not an IP address", address)
			case matchHost(policy.Deny, ip.String()):
				return fmt.Errorf("address %s (of %s) is on the web_request deny list", ip, host)
			case private(ip) && !privateOK:
				return fmt.Errorf("address %s (of %s) is loopback or private; web_request refuses it unless the person allows the host by name", ip, host)
			}
			return nil
		}}
		return d.DialContext(ctx, network, addr)
	}
	return &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{DialContext: dial, Proxy: nil},
		// A redirect may lead anywhere: each hop's host passes the lists
		// here, and its address the checks in dial.
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to %s refused: only http and https", req.URL)
			}
			if _, err := policy.check(req.URL.Hostname()); err != nil {
				return fmt.Errorf("redirect to %s refused: %w", req.URL, err)
			}
			return nil
		},
	}
}

// Fetcher makes the instance's requests under one policy.
type Fetcher struct {
	policy Policy
	// private classifies the addresses dialled: privateIP; a test counts
	// one loopback address as public, to stand for a public host.
	private func(net.IP) bool
}

// New is a Fetcher under p (which Check has passed).
func New(p Policy) *Fetcher { return &Fetcher{policy: p, private: privateIP} }

// Tools are the web_request and fetch_url tools: their answers are
// another site's text, which the caller makes inert (tool.Inert).
func (f *Fetcher) Tools() []llm.ToolHandler {
	return []llm.ToolHandler{
		{Tool: llm.Tool{Name: "fetch_url", Description: "GET a URL when web_fetch fails; text cut at 50,000 characters. Loopback and private addresses are refused unless allowed.",
			InputSchema: tool.Schema(`"url":{"type":"string"}`, "url")}, Run: f.fetchURL},
		{Tool: llm.Tool{Name: "web_request", Description: "Send an HTTP request (any method) from the kernel; the answer is cut at 50,000 characters. Loopback and private addresses are refused unless allowed.",
			InputSchema: tool.Schema(`"method":{"type":"string"},"url":{"type":"string"},"headers":{"type":"object","additionalProperties":{"type":"string"}},"body":{"type":"string"}`, "url")}, Run: f.webRequest},
	}
}

func (f *Fetcher) fetchURL(ctx context.Context, in json.RawMessage) (llm.ToolOutput, error) {
	var args struct {
		URL string `json:"url"`
	}
	if err := tool.Decode(in, &args); err != nil {
		return llm.ToolOutput{}, err
	}
	return f.httpRequest(ctx, http.MethodGet, args.URL, nil, "")
}

func (f *Fetcher) webRequest(ctx context.Context, in json.RawMessage) (llm.ToolOutput, error) {
	var args struct {
		Method  string            `json:"method"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	if err := tool.Decode(in, &args); err != nil {
		return llm.ToolOutput{}, err
	}
	method := strings.ToUpper(args.Method)
	if method == "" {
		method = http.MethodGet
	}
	return f.httpRequest(ctx, method, args.URL, args.Headers, args.Body)
}

// httpRequest is fetch_url and web_request: one request under the host
// policy, answered as "HTTP status (type)" and the body, truncated at
// Limit characters. A 4xx or 5xx answer is an error result.
func (f *Fetcher) httpRequest(ctx context.Context, method, rawURL string, headers map[string]string, body string) (llm.ToolOutput, error) {
	p, err := f.Do(ctx, method, rawURL, headers, body)
	if err != nil {
		return llm.ToolOutput{}, err
	}
	note := ""
	if p.Truncated {
		note = fmt.Sprintf("\n[truncated at %d characters]", Limit)
	}
	out := llm.TextOutput(fmt.Sprintf("HTTP %d (%s)\n%s%s", p.Status, p.Type, p.Body, note))
	out.IsError = p.Status >= 400
	return out, nil
}

// Page is one answer fetched under the host policy.
type Page struct {
	Status    int    `json:"status"`
	Type      string `json:"type"` // its Content-Type
	Body      string `json:"body"` // at most Limit characters
	Truncated bool   `json:"truncated"`
}

// Get GETs a URL under the host policy (a watched page); an answer of 400
// or above is an error.
func (f *Fetcher) Get(ctx context.Context, rawURL string) (Page, error) {
	p, err := f.Do(ctx, http.MethodGet, rawURL, nil, "")
	if err == nil && p.Status >= 400 {
		err = fmt.Errorf("HTTP %d", p.Status)
	}
	return p, err
}

// Do sends one request under the host policy (Policy: every hop and every
// address dialled checked) and reads at most Limit characters of the
// answer.
func (f *Fetcher) Do(ctx context.Context, method, rawURL string, headers map[string]string, body string) (Page, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return Page{}, fmt.Errorf("url %q: want an absolute http(s) URL", rawURL)
	}
	if _, err := f.policy.check(u.Hostname()); err != nil {
		return Page{}, err
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), strings.NewReader(body))
	if err != nil {
		return Page{}, err
	}
	for name, v := range headers {
		req.Header.Set(name, v)
	}
	client := webClient(f.policy, f.private)
	// The client is this request's own: its kept-alive connections would
	// stay open (and two goroutines each) for the life of the process.
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return Page{}, fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer func() { _ = resp.Body.Close() }() // what was read is the answer; closing has nothing to add
	// Read a little past the limit so a cut can be reported.
	data, err := io.ReadAll(io.LimitReader(resp.Body, Limit*4+4))
	if err != nil {
		return Page{}, fmt.Errorf("reading %s: %w", u, err)
	}
	p := Page{Status: resp.StatusCode, Type: resp.Header.Get("Content-Type"), Body: string(data)}
	if r := []rune(p.Body); len(r) > Limit {
		p.Body, p.Truncated = string(r[:Limit]), true
	}
	return p, nil
}
