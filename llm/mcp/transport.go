package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxFrame is the largest message a server may send: one JSON-RPC line
// over stdio, one event or JSON answer over HTTP. A 10 MB result fits; the
// tool loop then cuts it to its result limit.
const maxFrame = 16 << 20

// transport is the SDK transport that reaches s.
func transport(s Server) mcp.Transport {
	if s.URL != "" {
		return &mcp.StreamableClientTransport{
			Endpoint:   s.URL,
			HTTPClient: &http.Client{Transport: newHeaderTransport(s)},
			// A stream broken mid-answer is resumed twice at most: a server
			// that is down should fail the call, not hold it.
			MaxRetries:   2,
			MaxEventSize: maxFrame,
		}
	}
	return &stdioTransport{srv: s}
}

// headerTransport adds a server's headers to the requests bound for its
// own origin, and only those: a redirect elsewhere does not carry the
// token. It also bounds a plain JSON answer's size (an event stream's
// events are bounded by the SDK).
type headerTransport struct {
	base    http.RoundTripper
	origin  string
	headers map[string]string
}

func newHeaderTransport(s Server) *headerTransport {
	t := &headerTransport{base: http.DefaultTransport, headers: s.Headers}
	if u, err := url.Parse(s.URL); err == nil {
		t.origin = origin(u)
	}
	return t
}

func origin(u *url.URL) string { return strings.ToLower(u.Scheme + "://" + u.Host) }

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 && origin(req.URL) == t.origin {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		method := rpcMethod(req)
		limit := int64(maxFrame)
		if method != "" && method != "tools/call" {
			limit = maxHandshake
		}
		resp.Body = &limitedBody{ReadCloser: resp.Body, left: limit, limit: limit, method: method}
	}
	return resp, nil
}

// maxHandshake is the largest plain JSON answer to a request other than a
// tool call (the handshake, the tool list): more is a broken or hostile
// server, told as such at once rather than waited on.
const maxHandshake = 1 << 20

// rpcMethod is the JSON-RPC method a request of the SDK sends, or "" when
// its body cannot be read again or is not a small request (a tool call's
// arguments may be large; the handshake's are not).
func rpcMethod(req *http.Request) string {
	if req.GetBody == nil || req.ContentLength > 64<<10 {
		return ""
	}
	body, err := req.GetBody()
	if err != nil {
		return ""
	}
	defer func() { _ = body.Close() }() // an in-memory copy of the request: nothing to report
	var m struct {
		Method string `json:"method"`
	}
	if json.NewDecoder(body).Decode(&m) != nil {
		return ""
	}
	return m.Method
}

// limitedBody fails a read past its limit instead of buffering without end.
type limitedBody struct {
	io.ReadCloser
	left, limit int64
	method      string // the request's JSON-RPC method, when known
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		if b.method != "" {
			return 0, fmt.Errorf("the server answered more than %d MiB to %s, the most taken", b.limit>>20, b.method)
		}
		return 0, fmt.Errorf("the server answered more than %d MiB, the most taken", b.limit>>20)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// stdioTransport runs a server's command and speaks MCP over its stdin and
// stdout. Unlike the SDK's CommandTransport it passes only a few
// variables of the kernel's environment on (an API key stays with the
// kernel), keeps the end of the command's stderr for error messages, puts
// the command in its own process group and ends the whole group on close,
// so a server started through a wrapper (npx, uvx, a shell) leaves nothing
// behind.
type stdioTransport struct {
	srv  Server
	proc *process // the command Connect started
}

// passedEnv names the variables of the kernel's environment a server's
// command gets, besides those given with the server: what programs need
// to find themselves, their home and their locale (the MCP SDKs' own
// default list, with the locale and temporary directory).
var passedEnv = []string{"HOME", "LANG", "LC_ALL", "LC_CTYPE", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "TZ", "USER"}

func commandEnv(extra map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, given := extra[k]; !given && slices.Contains(passedEnv, k) {
			env = append(env, kv)
		}
	}
	for _, k := range sortedKeys(extra) {
		env = append(env, k+"="+extra[k])
	}
	return env
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	cmd := exec.Command(t.srv.Command, t.srv.Args...)
	cmd.Env = commandEnv(t.srv.Env)
	ownGroup(cmd)
	// Plain pipes rather than cmd's: Wait then neither closes our ends nor
	// waits for a child of the server that holds one, and the reader sees
	// the server's last bytes, then EOF.
	var pipes [6]*os.File // stdout, stderr and stdin: read end, write end
	for i := 0; i < len(pipes); i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, errors.Join(err, closeAll(pipes[:i]...))
		}
		pipes[i], pipes[i+1] = r, w
	}
	outR, outW, errR, errW, inR, inW := pipes[0], pipes[1], pipes[2], pipes[3], pipes[4], pipes[5]
	cmd.Stdout, cmd.Stderr, cmd.Stdin = outW, errW, inR
	err := cmd.Start()
	// The child has its own copies of these ends now.
	closeErr := closeAll(outW, errW, inR)
	if err != nil {
		return nil, errors.Join(err, closeAll(outR, errR, inW))
	}
	p := &process{cmd: cmd, stdin: inW, stdout: outR, stderr: &tail{}, stderrDone: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		_, _ = io.Copy(p.stderr, errR) // it ends when the whole group has exited, or on a read error: either way, the end
		_ = errR.Close()               // ours, and read to its end
		close(p.stderrDone)
	}()
	go p.wait()
	if closeErr != nil {
		return nil, errors.Join(closeErr, p.Close())
	}
	t.proc = p
	return (&mcp.IOTransport{Reader: outR, Writer: p, MaxLineLength: maxFrame}).Connect(ctx)
}

func closeAll(files ...*os.File) error {
	var errs []error
	for _, f := range files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// process is a running server command: our ends of its stdin and stdout,
// the end of what it wrote on stderr, and the group it leads.
type process struct {
	cmd        *exec.Cmd
	stdin      *os.File
	stdout     *os.File // closed by the session first, or by Close
	stderr     *tail
	stderrDone chan struct{} // closed once stderr is read to its end
	exited     chan struct{} // closed once the group has exited and its stderr is read
	once       sync.Once
	err        error
}

// wait reaps the command; once it has exited, the rest of its group goes
// too, so that no child of it keeps stdout open and the session sees EOF.
func (p *process) wait() {
	_ = p.cmd.Wait() // how it exited is not news to anyone: the session ends either way
	killGroup(p.cmd)
	select {
	case <-p.stderrDone:
	case <-time.After(time.Second): // a child that left the group holds stderr
	}
	close(p.exited)
}

// lastWords is the end of what the command wrote on stderr, complete once
// it has exited: a caller that saw the connection break waits a moment for
// that (a dying command's last words may still be in the pipe), not for a
// command that lives on.
func (p *process) lastWords() string {
	if p == nil {
		return ""
	}
	select {
	case <-p.exited:
	case <-time.After(time.Second):
	}
	return p.stderr.String()
}

func (p *process) Write(b []byte) (int, error) { return p.stdin.Write(b) }

// Close ends the server as the MCP spec asks of a stdio client: close its
// stdin, wait for it to exit, then SIGTERM, then SIGKILL (its whole group).
func (p *process) Close() error {
	p.once.Do(func() {
		p.err = p.stdin.Close()
		for _, step := range []func(*exec.Cmd){nil, termGroup, killGroup} {
			if step != nil {
				step(p.cmd)
			}
			select {
			case <-p.exited:
				return
			case <-time.After(2 * time.Second):
			}
		}
		p.err = errors.Join(p.err, fmt.Errorf("the server's command (pid %d) did not exit", p.cmd.Process.Pid))
	})
	if err := p.stdout.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return errors.Join(p.err, err)
	}
	return p.err
}

// tail keeps the last bytes a command wrote on stderr.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 2048

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailSize:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
