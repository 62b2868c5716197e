package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmkernels/kernels/llm"
)

// Options tune a Set; the zero value is usable.
type Options struct {
	// CallTimeout bounds one tool call, within the caller's own deadline.
	// Default 2 minutes.
	CallTimeout time.Duration
	// ConnectTimeout bounds connecting to a server and listing its tools,
	// within the caller's own deadline. Default 30 seconds.
	ConnectTimeout time.Duration
	// Images passes the images of a tool's answer to the model as image
	// blocks in its tool result (those the API takes: result.go). Without
	// it, for a caller that reads results as text, each image is a line
	// saying it was left out.
	Images bool
	// Observe receives every call and every change of a server's state.
	// It may be called from several goroutines at once, and should return
	// quickly.
	Observe func(Event)
}

const (
	defaultCallTimeout    = 2 * time.Minute
	defaultConnectTimeout = 30 * time.Second
)

// Kinds of Event.
const (
	EventCall         = "call"          // a tool call ended: Tool, Duration, Bytes, IsError, Err
	EventConnect      = "connect"       // a connection attempt ended: Duration; Err when it failed
	EventToolsChanged = "tools_changed" // the server said its tool list changed; it is listed again before the next call or offer
	EventClosed       = "closed"        // the server's connection ended without being asked to: Err
)

// Event is what an observer is told. No field ever holds a secret, and
// Err, which may quote the server, is inert.
type Event struct {
	Kind     string
	Server   string
	Tool     string // the name offered to the model, NAME__tool
	Duration time.Duration
	Bytes    int  // the size of the content the server answered
	IsError  bool // the model got an error result
	Err      string
}

// Set is a person's MCP servers, connected on demand and offered to a
// model as tools. It is safe for concurrent use. Close it when done: it
// ends the servers' commands.
type Set struct {
	conns []*conn
}

// NewSet checks the servers (each with Check, and no two with one name,
// whatever its case) and returns their Set. Nothing is connected yet.
func NewSet(servers []Server, opts Options) (*Set, error) {
	if err := checkAll(servers); err != nil {
		return nil, err
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = defaultCallTimeout
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = defaultConnectTimeout
	}
	s := &Set{}
	for _, srv := range servers {
		s.conns = append(s.conns, newConn(srv, opts))
	}
	return s, nil
}

func checkAll(servers []Server) error {
	seen := map[string]string{}
	for _, srv := range servers {
		if err := srv.Check(); err != nil {
			return err
		}
		key := strings.ToLower(srv.Name)
		if other, dup := seen[key]; dup {
			return &InvalidError{Server: srv.Name, Field: "name", Problem: fmt.Sprintf("another server is named %q; each server's tools need their own prefix", other)}
		}
		seen[key] = srv.Name
	}
	return nil
}

// Offer is what a Set offers the model now.
type Offer struct {
	// Handlers are the servers' tools as llm tools named NAME__tool, in the
	// order of the servers and of their tool lists.
	Handlers []llm.ToolHandler
	// Notes say what was left out and why (a server that did not answer, a
	// schema the API would refuse, a name too long), what was changed (a
	// description cut), and how a server's tool list changed since the
	// last offer. For the caller to log or show; they are inert.
	Notes []string
}

// Offer connects to the servers not connected yet, lists again the tools
// of those whose list changed, and returns every tool the API would take.
// A server that cannot be reached is left out with a note, and tried again
// at the next Offer or call.
func (s *Set) Offer(ctx context.Context) Offer {
	errs := make([]error, len(s.conns))
	var wg sync.WaitGroup
	for i, c := range s.conns {
		wg.Go(func() { _, _, errs[i] = c.ready(ctx) })
	}
	wg.Wait()
	var o Offer
	seen := map[string]bool{}
	for i, c := range s.conns {
		o.Notes = append(o.Notes, c.takeChanges()...)
		if errs[i] != nil {
			o.Notes = append(o.Notes, fmt.Sprintf("%s; its tools are not offered", errs[i]))
			continue
		}
		c.offer(&o, seen)
	}
	return o
}

// Close disconnects every server and ends their commands.
func (s *Set) Close() error {
	var errs []error
	for _, c := range s.conns {
		errs = append(errs, c.close())
	}
	return errors.Join(errs...)
}

// Probe connects to one server, lists its tools and disconnects: what
// `mcp add` does before it stores a server. A malformed server is an
// *InvalidError, one that does not answer an *UnreachableError.
func Probe(ctx context.Context, srv Server, opts Options) (Offer, error) {
	set, err := NewSet([]Server{srv}, opts)
	if err != nil {
		return Offer{}, err
	}
	c := set.conns[0]
	_, _, err = c.ready(ctx)
	if err != nil {
		return Offer{}, errors.Join(err, set.Close())
	}
	var o Offer
	c.offer(&o, map[string]bool{})
	return o, set.Close()
}

// conn is one server's connection, made when first needed and made again
// after the server went away.
type conn struct {
	srv    Server
	opts   Options
	red    redactor
	lock   chan struct{} // held while connecting or listing
	stale  atomic.Bool   // the server said its tools changed since they were listed
	client *mcp.Client

	mu      sync.Mutex // guards the fields below
	sess    *session
	tools   []*mcp.Tool // as last listed; nil before the first list
	changes []string    // notes of list changes not yet in an Offer
	closed  bool
}

func newConn(srv Server, opts Options) *conn {
	c := &conn{srv: srv, opts: opts, red: newRedactor(srv), lock: make(chan struct{}, 1)}
	c.client = mcp.NewClient(&mcp.Implementation{Name: "llmkernels", Version: "1"}, &mcp.ClientOptions{
		// Offer the server nothing of ours (no roots, sampling or
		// elicitation): it gets tool calls and their arguments.
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.stale.Store(true)
			c.observe(Event{Kind: EventToolsChanged, Server: srv.Name})
		},
	})
	return c
}

func (c *conn) observe(e Event) {
	if c.opts.Observe != nil {
		c.opts.Observe(e)
	}
}

// session is a connection to a server, and the command it runs over
// stdio (nil over HTTP).
type session struct {
	*mcp.ClientSession
	proc *process
}

// ready returns a connected session and the server's current tools:
// connecting first if there is no session, listing again if the list
// changed. Its error is an *UnreachableError.
func (c *conn) ready(ctx context.Context) (*session, []*mcp.Tool, error) {
	select {
	case c.lock <- struct{}{}:
		defer func() { <-c.lock }()
	case <-ctx.Done():
		return nil, nil, c.unreachable(ctx.Err(), nil)
	}
	c.mu.Lock()
	sess, tools, closed := c.sess, c.tools, c.closed
	c.mu.Unlock()
	if closed {
		return nil, nil, &UnreachableError{Server: c.srv.Name, Detail: "this MCP client was closed"}
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
	defer cancel()
	if sess == nil {
		var err error
		if sess, err = c.connect(ctx); err != nil {
			return nil, nil, err
		}
		tools = nil
	}
	if tools != nil && !c.stale.Load() {
		return sess, tools, nil
	}
	// Cleared before listing: a change told during the list is seen next time.
	c.stale.Store(false)
	var listed []*mcp.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			err = fmt.Errorf("listing its tools: %w", err)
			c.stale.Store(true)
			c.drop(sess, err)
			return nil, nil, c.unreachable(err, sess.proc)
		}
		listed = append(listed, t)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tools != nil {
		if note := changeNote(c.srv.Name, c.tools, listed); note != "" {
			c.changes = append(c.changes, note)
		}
	}
	c.tools = listed
	return sess, listed, nil
}

func (c *conn) connect(ctx context.Context) (*session, error) {
	start := time.Now()
	tr := transport(c.srv)
	cs, err := c.client.Connect(ctx, tr, nil)
	var proc *process
	if st, ok := tr.(*stdioTransport); ok {
		proc = st.proc
	}
	if err != nil {
		uerr := c.unreachable(err, proc)
		if proc != nil {
			// The SDK closes what it made on most failures of its
			// handshake, but not all.
			go func() { _ = proc.Close() }() // the connection failed already; how it ends adds nothing
		}
		c.observe(Event{Kind: EventConnect, Server: c.srv.Name, Duration: time.Since(start), Err: uerr.Detail})
		return nil, uerr
	}
	c.observe(Event{Kind: EventConnect, Server: c.srv.Name, Duration: time.Since(start)})
	sess := &session{cs, proc}
	c.mu.Lock()
	if c.closed { // Close ran while connecting
		c.mu.Unlock()
		_ = cs.Close() // closing what was never used: nothing to report
		return nil, &UnreachableError{Server: c.srv.Name, Detail: "this MCP client was closed"}
	}
	c.sess = sess
	c.mu.Unlock()
	go func() {
		err := cs.Wait()
		if err == nil {
			err = errors.New("the connection ended")
		}
		c.drop(sess, err)
	}()
	return sess, nil
}

// drop forgets sess, broken by err, and closes it, so the next call
// connects afresh. The first to drop a session reports it (the call that
// saw it break, or the watch on its end), and only a session that was not
// closed on purpose.
func (c *conn) drop(sess *session, err error) {
	c.mu.Lock()
	current := c.sess == sess
	if current {
		c.sess = nil
	}
	c.mu.Unlock()
	if !current {
		return
	}
	// A stdio server's close waits for its command to exit: not on the
	// caller's time.
	go func() { _ = sess.Close() }() // the session is broken already; its close error says nothing new
	c.observe(Event{Kind: EventClosed, Server: c.srv.Name, Err: c.detail(err, sess.proc)})
}

// detail is err's text for a person or the model: redacted, inert, and
// with the last words of proc (a server's command) on stderr, if any.
func (c *conn) detail(err error, proc *process) string {
	d := c.red.line(err.Error())
	if s := proc.lastWords(); s != "" {
		d += "; it wrote on stderr: " + c.red.line(s)
	}
	return d
}

func (c *conn) close() error {
	c.mu.Lock()
	sess := c.sess
	c.sess, c.closed = nil, true
	c.mu.Unlock()
	if sess == nil {
		return nil
	}
	err := sess.Close()
	if c.srv.Transport() == TransportHTTP {
		// Closing an HTTP session asks the server to forget it; a server
		// that does not answer forgets it on its own, and there is nothing
		// of ours left to clean up.
		return nil
	}
	if err != nil {
		return fmt.Errorf("close mcp server %q: %s", c.srv.Name, c.red.line(err.Error()))
	}
	return nil
}

func (c *conn) unreachable(err error, proc *process) *UnreachableError {
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("it did not answer in time (%w)", err)
	}
	return &UnreachableError{Server: c.srv.Name, Detail: c.detail(err, proc)}
}

func (c *conn) takeChanges() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	notes := c.changes
	c.changes = nil
	return notes
}

// offer adds the server's offerable tools to o; seen holds the names
// offered so far.
func (c *conn) offer(o *Offer, seen map[string]bool) {
	c.mu.Lock()
	tools := c.tools
	c.mu.Unlock()
	for _, t := range tools {
		name := offerName(c.srv.Name, t.Name)
		leftOut := func(why string) {
			o.Notes = append(o.Notes, fmt.Sprintf("mcp server %q: tool %q left out: %s", c.srv.Name, inert(t.Name, false), why))
		}
		schema, err := json.Marshal(t.InputSchema)
		switch {
		case t.Name == "":
			leftOut("it has no name")
			continue
		case len(name) > maxToolName: // offerName leaves only ASCII: bytes are characters
			leftOut(fmt.Sprintf("its name as offered, %s, has %d characters; the API takes at most %d", name, len(name), maxToolName))
			continue
		case seen[name]:
			leftOut(fmt.Sprintf("another tool is offered as %s already", name))
			continue
		case err != nil:
			leftOut(fmt.Sprintf("its input schema does not encode: %v", err))
			continue
		}
		if err := CheckSchema(schema); err != nil {
			leftOut(fmt.Sprintf("the API would refuse its schema: %v", err))
			continue
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		desc = inert(desc, true)
		if n := utf8.RuneCountInString(desc); n > maxDescription {
			desc = string([]rune(desc)[:maxDescription]) + "…"
			o.Notes = append(o.Notes, fmt.Sprintf("mcp server %q: tool %s: description cut from %d to %d characters", c.srv.Name, name, n, maxDescription))
		}
		seen[name] = true
		mcpName := t.Name
		o.Handlers = append(o.Handlers, llm.ToolHandler{
			Tool: llm.Tool{Name: name, Description: desc, InputSchema: schema},
			Run: func(ctx context.Context, input json.RawMessage) (llm.ToolOutput, error) {
				return c.call(ctx, name, mcpName, input), nil
			},
		})
	}
}

// changeNote names the tools that came and went, or is "" when none did.
func changeNote(server string, before, after []*mcp.Tool) string {
	names := func(ts []*mcp.Tool) []string {
		n := make([]string, len(ts))
		for i, t := range ts {
			n[i] = inert(t.Name, false)
		}
		return n
	}
	was, is := names(before), names(after)
	var added, removed []string
	for _, n := range is {
		if !slices.Contains(was, n) {
			added = append(added, n)
		}
	}
	for _, n := range was {
		if !slices.Contains(is, n) {
			removed = append(removed, n)
		}
	}
	if len(added) == 0 && len(removed) == 0 {
		return "" // a connection made again, or new descriptions: nothing to tell
	}
	note := fmt.Sprintf("mcp server %q changed its tools", server)
	if len(added) > 0 {
		note += "; new: " + strings.Join(added, ", ")
	}
	if len(removed) > 0 {
		note += "; gone: " + strings.Join(removed, ", ")
	}
	return note
}

// call runs one tool call and reports it. Whatever happens (the server
// down, slow, dead mid-call, answering garbage), the model gets a result:
// an error result saying what went wrong.
func (c *conn) call(ctx context.Context, offered, tool string, input json.RawMessage) llm.ToolOutput {
	start := time.Now()
	out, size, why := c.run(ctx, tool, input)
	if why == "" && out.IsError {
		why = "the tool answered with an error: " + excerpt(out.Content.String()) // redacted and inert already
	}
	c.observe(Event{Kind: EventCall, Server: c.srv.Name, Tool: offered, Duration: time.Since(start), Bytes: size, IsError: out.IsError, Err: why})
	return out
}

// run makes the call; why is set when the call itself failed, and is then
// the error result's text too.
func (c *conn) run(parent context.Context, tool string, input json.RawMessage) (out llm.ToolOutput, size int, why string) {
	fail := func(format string, args ...any) (llm.ToolOutput, int, string) {
		msg := fmt.Sprintf(format, args...)
		return llm.ErrorOutput(msg), 0, msg
	}
	args := bytes.TrimSpace(input)
	if len(args) == 0 {
		args = []byte("{}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return fail("the tool's input must be a JSON object")
	}
	ctx, cancel := context.WithTimeout(parent, c.opts.CallTimeout)
	defer cancel()
	sess, tools, err := c.ready(ctx)
	if err != nil {
		var uerr *UnreachableError
		if errors.As(err, &uerr) {
			return fail("mcp server %q cannot be reached: %s", c.srv.Name, uerr.Detail)
		}
		return fail("%s", c.red.line(err.Error()))
	}
	if !slices.ContainsFunc(tools, func(t *mcp.Tool) bool { return t.Name == tool }) {
		return fail("mcp server %q no longer offers the tool %q: its tool list changed; the tools offered next turn are current", c.srv.Name, inert(tool, false))
	}
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
	if err == nil {
		out, size = output(res, c.red, c.opts.Images)
		return out, size, ""
	}
	var rpcErr *jsonrpc.Error
	switch {
	case errors.Is(parent.Err(), context.DeadlineExceeded):
		return fail("the call to mcp server %q was stopped: the caller's deadline passed", c.srv.Name)
	case parent.Err() != nil:
		return fail("the call to mcp server %q was stopped: %v", c.srv.Name, context.Cause(parent))
	case ctx.Err() != nil:
		return fail("mcp server %q did not answer within %s; the call was cancelled", c.srv.Name, c.opts.CallTimeout)
	case errors.As(err, &rpcErr) && rpcErr.Code != codeRejected:
		return fail("mcp server %q refused the call: %s", c.srv.Name, c.red.line(rpcErr.Message))
	}
	// The connection broke (the server died, or sent what is not MCP): the
	// next call connects afresh.
	c.drop(sess, err)
	return fail("mcp server %q failed during the call (%s); the next call starts a new connection", c.srv.Name, c.detail(err, sess.proc))
}

// codeRejected is the code of the SDK's "rejected by transport" error: no
// answer came from the server (its HTTP request failed). The SDK does not
// export it.
const codeRejected = -32005

// excerpt is the start of a result's text, on one line, for an event.
func excerpt(s string) string {
	const n = 200
	s = inert(s, false)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
