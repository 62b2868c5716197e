package hermitcrab

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

	"github.com/llmkernels/kernels/llm"
)

// WebPolicy says which hosts web_request and fetch_url may reach. Patterns
// are host names or IP addresses, and "*.example.com" matches any
// subdomain. Deny always wins. With Allow empty every public host is
// reachable; with Allow set only the hosts it matches are. Loopback,
// private, link-local and unspecified addresses are refused unless a host
// is allowed by name.
//
// Every hop is checked, redirects included, and on the address actually
// dialled: a redirect's host must pass the deny and allow lists like the
// first URL's; each connection's IP address must not be on the deny list,
// and must not be private unless the host being dialled is allowed by
// name, so a public name that resolves (or is rebound) to a private
// address is refused too. At most maxRedirects redirects are followed.
type WebPolicy struct {
	Allow []string
	Deny  []string
}

// maxRedirects is how many redirects one request may follow.
const maxRedirects = 5

func matchHost(patterns []string, host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, p := range patterns {
		p = strings.ToLower(strings.TrimSpace(p))
		if p == host {
			return true
		}
		if ok, _ := path.Match(p, host); ok && strings.HasPrefix(p, "*.") {
			return true
		}
	}
	return false
}

// check says whether host may be requested, and whether it may resolve to
// a private address (only when allowed by name).
func (p WebPolicy) check(host string) (privateOK bool, err error) {
	if matchHost(p.Deny, host) {
		return false, fmt.Errorf("host %s is on the web_request deny list", host)
	}
	if len(p.Allow) > 0 && !matchHost(p.Allow, host) {
		return false, fmt.Errorf("host %s is not on the web_request allow list (%s)", host, strings.Join(p.Allow, ", "))
	}
	return matchHost(p.Allow, host), nil
}

func privateIP(ip net.IP) bool {
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified()
}

// webClient makes one request's client: every connection it dials and
// every redirect it follows is checked against the policy (see WebPolicy).
// private classifies addresses (privateIP; tests may count one loopback
// address as public, to stand for a public host).
func webClient(policy WebPolicy, private func(net.IP) bool) *http.Client {
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
				return fmt.Errorf("address %s (of %s) is loopback or private; web_request refuses it unless the host is on the allow list (--web-allow)", ip, host)
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

func (k *Kernel) toolWebRequest(ctx context.Context, in json.RawMessage) (llm.ToolOutput, error) {
	var args struct {
		Method  string            `json:"method"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	if err := decode(in, &args); err != nil {
		return llm.ToolOutput{}, err
	}
	method := strings.ToUpper(args.Method)
	if method == "" {
		method = http.MethodGet
	}
	return k.httpRequest(ctx, method, args.URL, args.Headers, args.Body)
}

// httpRequest is fetch_url and web_request: one request under the host
// policy, answered as "HTTP status (type)" and the body, truncated at
// fetchLimit characters. A 4xx or 5xx answer is an error result.
func (k *Kernel) httpRequest(ctx context.Context, method, rawURL string, headers map[string]string, body string) (llm.ToolOutput, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return llm.ToolOutput{}, fmt.Errorf("url %q: want an absolute http(s) URL", rawURL)
	}
	if _, err := k.opts.WebRequest.check(u.Hostname()); err != nil {
		return llm.ToolOutput{}, err
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), strings.NewReader(body))
	if err != nil {
		return llm.ToolOutput{}, err
	}
	for name, v := range headers {
		req.Header.Set(name, v)
	}
	resp, err := webClient(k.opts.WebRequest, k.isPrivate).Do(req)
	if err != nil {
		return llm.ToolOutput{}, fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer func() { _ = resp.Body.Close() }() // what was read is the answer; closing has nothing to add
	// Read a little past the limit so a cut can be reported.
	data, err := io.ReadAll(io.LimitReader(resp.Body, fetchLimit*4+4))
	if err != nil {
		return llm.ToolOutput{}, fmt.Errorf("reading %s: %w", u, err)
	}
	text, note := string(data), ""
	if r := []rune(text); len(r) > fetchLimit {
		text, note = string(r[:fetchLimit]), fmt.Sprintf("\n[truncated at %d characters]", fetchLimit)
	}
	out := llm.TextOutput(fmt.Sprintf("HTTP %d (%s)\n%s%s", resp.StatusCode, resp.Header.Get("Content-Type"), text, note))
	out.IsError = resp.StatusCode >= 400
	return out, nil
}
