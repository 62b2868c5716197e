package mcp

// The real MCP servers the tests talk to: the go-sdk's server, over
// streamable HTTP in an httptest server, and over stdio in this test
// binary started again as a command (TestMain).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioMode, in the environment, makes this binary an MCP server on its
// stdin and stdout ("serve"), or a command that fails as one ("crash").
const stdioMode = "LLM_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	switch os.Getenv(stdioMode) {
	case "serve":
		srv := testServer(nil)
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "deaf": // a server that does not exit when its stdin or stdout closes
		signal.Ignore(syscall.SIGPIPE)
		srv := testServer(nil)
		_ = srv.Run(context.Background(), &mcp.IOTransport{Reader: deafReader{os.Stdin}, Writer: deafWriter{os.Stdout}})
		os.Exit(0)
	case "crash":
		fmt.Fprintln(os.Stderr, "fatal: no config file at /etc/nowhere.conf")
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// deafReader never ends: at the end of its input it waits forever.
type deafReader struct{ r io.Reader }

func (d deafReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err == io.EOF {
		time.Sleep(time.Hour) // not select{}: the runtime would end a process whose goroutines all wait
	}
	return n, err
}

func (deafReader) Close() error { return nil }

// deafWriter does not notice that no one reads.
type deafWriter struct{ w io.Writer }

func (d deafWriter) Write(p []byte) (int, error) {
	_, _ = d.w.Write(p) // deaf on purpose
	return len(p), nil
}

func (deafWriter) Close() error { return nil }

// stdioServer is the stdio test server: this binary, told to serve by its
// environment (given as the server's Env: the command gets nothing else of
// ours but PATH, HOME and the like).
func stdioServer(t *testing.T, name string) Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Server{Name: name, Command: exe, Env: map[string]string{stdioMode: "serve"}}
}

// bigResult is the size of the "big" tool's answer.
const bigResult = 10 << 20

// hostileText is what a hostile server may send a terminal or a model:
// an OSC title, a screen clear, a C1 CSI, a bidi override, a bad byte.
const hostileText = "a\x1b]0;pwned\x07\x1b[2Jb\u009b31mc\u202ed\xffe\r\nnext\tline"

// testServer is the go-sdk server both transports serve. die, when not
// nil, is what the "die" tool does over HTTP (over stdio it exits).
func testServer(die func()) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "llm-mcp-test", Version: "1"}, nil)
	object := map[string]any{"type": "object", "properties": map[string]any{}}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	add := func(name, desc string, schema any, run func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error)) {
		srv.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: schema}, run)
	}
	add("echo", "Echo the text back.", map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Text string }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return text("echo: " + in.Text), nil
		})
	add("big", "Answer 10 MB of text.", object, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(strings.Repeat("x", bigResult)), nil
	})
	add("hang", "Never answer.", object, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	add("image", "Answer a picture and a line.", object, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "a pixel:"},
			&mcp.ImageContent{MIMEType: "image/png", Data: pngImage(1, 1)},
			&mcp.ImageContent{MIMEType: "image/tiff", Data: []byte("II*\x00")},
			&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF")},
		}}, nil
	})
	add("fails", "Report an error.", object, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk full"}}}, nil
	})
	add("hostile", "Answer control characters.\x1b[2J", object, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(hostileText), nil
	})
	add("files.read", "A name with a dot.", object, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("read"), nil
	})
	add("bad_schema", "Its schema is made a string schema on the way out.", object, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("never offered"), nil
	})
	add("oneof", "A top-level oneOf.", map[string]any{"type": "object", "oneOf": []any{
		map[string]any{"required": []any{"a"}}, map[string]any{"required": []any{"b"}},
	}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("never offered"), nil
	})
	add("gone", "Removed by grow.", object, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("still here"), nil
	})
	add("grow", "Add the tool late and remove gone.", object, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		srv.AddTool(&mcp.Tool{Name: "late", Description: "Added mid-run.", InputSchema: object},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("late"), nil })
		srv.RemoveTools("gone")
		return text("grown"), nil
	})
	add("whoami", "Say what Authorization header came.", object, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		got := ""
		if req.Extra != nil && req.Extra.Header != nil {
			got = req.Extra.Header.Get("Authorization")
		}
		return text("you sent: " + got), nil
	})
	add("env", "Say which variables the command got.", object, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var lines []string
		for _, k := range []string{"ANTHROPIC_API_KEY", "LLM_MCP_TEST_TOKEN", "PATH"} {
			_, ok := os.LookupEnv(k)
			lines = append(lines, fmt.Sprintf("%s=%v", k, ok))
		}
		return text(strings.Join(lines, "\n")), nil
	})
	add("die", "Die mid-call.", object, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if die == nil { // over stdio: the process dies
			fmt.Fprintln(os.Stderr, "panic: the server crashed")
			os.Exit(2)
		}
		die() // the connection carrying this call is gone: no one reads what follows
		return nil, fmt.Errorf("dead")
	})
	add("pid", "Say the server's process id.", object, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(strconv.Itoa(os.Getpid())), nil
	})
	add("spawn", "Start a child that holds stdout and outlives the server; say its process id.", object, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		child := exec.Command("sleep", "300")
		child.Stdout = os.Stdout
		if err := child.Start(); err != nil {
			return nil, err
		}
		return text(strconv.Itoa(child.Process.Pid)), nil
	})
	add("huge", "Answer more than a message may hold.", object, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(strings.Repeat("x", maxFrame+1)), nil
	})
	add("garbage", "Write garbage on stdout.", object, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Fprintln(os.Stdout, "this is not JSON-RPC {{{")
		return text("after the garbage"), nil
	})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if list, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				tools := make([]*mcp.Tool, len(list.Tools))
				for i, tool := range list.Tools {
					if tool.Name == "bad_schema" {
						c := *tool
						c.InputSchema = map[string]any{"type": "string"}
						tool = &c
					}
					tools[i] = tool
				}
				list.Tools = tools
			}
			return res, err
		}
	})
	return srv
}

// httpServer is the test server over streamable HTTP. Over HTTP, "die"
// kills every connection, in flight or to come, and "garbage" is answered
// with what is not JSON. A token, when given, must come as "Bearer TOKEN";
// a request without it gets a 401 whose JSON-RPC error quotes the header
// it did get, as a careless server might.
func httpServer(t *testing.T, token string) *httptest.Server {
	t.Helper()
	var (
		dead atomic.Bool
		ts   *httptest.Server
	)
	srv := testServer(func() {
		dead.Store(true)
		ts.CloseClientConnections()
	})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"bad credentials: %s"}}`, r.Header.Get("Authorization"))
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"name":"garbage"`)) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, "this is not JSON-RPC {{{")
			return
		}
		if dead.Load() {
			hijackAndClose(w)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		dead.Store(true) // every stream still open ends at once
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts
}

// hijackAndClose drops the connection without an answer, as a crashed
// server does.
func hijackAndClose(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close() // the point is that it is gone
	}
}
