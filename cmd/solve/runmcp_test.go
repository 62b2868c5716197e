package main_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const camGoal = "Read the hot spot of board A with the camera"

// camSteps is a one-node goal whose resolve asks for the tools of the
// run's MCP servers: board (HTTP) and cam (stdio) in one turn, then
// answers once their results are in the next request (the script has no
// answer for a request without them).
func camSteps(t *testing.T) []any {
	t.Helper()
	var rs []any
	for _, s := range []step{
		{OpIdentify, camGoal, 0, m{"constraints": []any{m{"type": "semantic", "domain": "hardware", "title": "a reading in degrees C", "rubric": "a number"}},
			"required_capabilities": []string{"planning"}, "rationale": "a measurement"}},
		{OpSelect, camGoal, 0, m{"selected": []string{"c1"}, "rationale": "it"}},
		{OpRoute, camGoal, 0, m{"resolver_id": "claude-code-0", "capability": "planning", "rationale": "it has the tools"}},
		{OpVerify, camGoal, 1, m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": 0.9, "detail": "71C"}}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "a reading"}},
		{OpConsistency, camGoal, 0, m{"verdict": "SAT", "conflicts": []any{}}},
		{OpAssemble, camGoal, 0, m{"summary": "board A read"}},
	} {
		rs = append(rs, scriptEntry(t, s))
	}
	use := func(id, name string) m {
		return m{"type": "tool_use", "id": id, "name": name, "input": m{"board": "A"}}
	}
	rs = append(rs,
		m{"match": m{"system_contains": "operation: resolve", "last_user_contains": "Operation: resolve · attempt 1\nGoal: " + camGoal},
			"response": m{"stop_reason": "tool_use", "content": []any{m{"type": "text", "text": "Reading both."}, use("toolu_1", "board__read_board"), use("toolu_2", "cam__read_board"), use("toolu_3", "junk__read_board")}}},
		m{"match": m{"system_contains": "operation: resolve", "tool_result_for": "cam__read_board", "last_user_contains": `hot spot 71C; arguments {"board":"A"}`},
			"response": m{"content": []any{m{"type": "text", "text": `{"summary": "board A read", "text": "hot spot 71C, read with the camera"}`}}}})
	return rs
}

func writeEntries(t *testing.T, dir string, rs []any) string {
	t.Helper()
	data, _ := json.Marshal(m{"responses": rs})
	p := filepath.Join(dir, "script.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// junkServer is boardServer over streamable HTTP, except that it answers
// a tool call with what is not JSON.
func junkServer() *httptest.Server {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return boardServer() }, nil)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body) // a short read is the SDK's to refuse
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("{not json")) // the client sees what it sees
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
}

// closedURL is an http URL nothing listens at.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr + "/mcp"
}

// solve run --mcp / --mcp-command: claude-code-0's resolve asks for two
// MCP tools (one server over streamable HTTP, one a command over stdio),
// their results reach the next request, and its answer is the node's
// output; each tool call is in the run's log with its server. A server
// that answers a call with garbage gives the model an error result, and
// the run goes on. A server that does not answer at the start is named
// on stderr in one line and the run goes on without it. Remote workers
// cannot offer the servers: --remote with --mcp is refused.
func TestARunOffersItsMCPServersToolsToTheModel(t *testing.T) {
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return boardServer() }, nil))
	defer srv.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	down := closedURL(t)
	junk := junkServer()
	defer junk.Close()
	eachStore(t, func(t *testing.T, dir string) {
		sc := writeEntries(t, dir, camSteps(t))
		args := []string{"run", camGoal, "--provider", "script", "--script", sc, "--budget", "5", "--time", "1h",
			"--mcp", "board=" + srv.URL, "--mcp", "gone=" + down, "--mcp", "junk=" + junk.URL, "--mcp-command", "cam=" + self + " " + mcpServerArg, "--unconfined"}
		if r := runSolve(t, dir, args[:len(args)-1]...); r.code != 2 || !strings.Contains(r.stderr, "--mcp-command cam: solve cannot confine the process an MCP server's command starts; give --unconfined to run it") {
			t.Fatalf("run --mcp-command without --unconfined: exit %d\n%s", r.code, r.stderr)
		}
		if strings.HasPrefix(dbOf(dir), "postgres") {
			if r := runSolve(t, dir, append(args, "--remote")...); r.code == 0 || !strings.Contains(r.stderr, "remote workers cannot offer a run's MCP servers yet; run it without --remote") {
				t.Fatalf("run --remote --mcp: exit %d\n%s", r.code, r.stderr)
			}
		}
		r := runSolve(t, dir, args...)
		if r.code != 0 || !strings.Contains(r.stdout, ": achieved") {
			t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		var gone []string
		for _, line := range strings.Split(r.stderr, "\n") {
			if strings.Contains(line, `"gone"`) {
				gone = append(gone, line)
			}
		}
		if len(gone) != 1 || !strings.Contains(gone[0], "cannot be reached") || !strings.Contains(gone[0], "goes on without its tools") {
			t.Errorf("the server that is down, on stderr: %q", gone)
		}
		db := openDB(t, dir)
		for _, server := range []string{"board", "cam"} {
			var summary, detail string
			if err := db.QueryRow("SELECT summary, detail FROM logs WHERE tier = 3 AND summary LIKE 'mcp "+server+"__read_board%'").Scan(&summary, &detail); err != nil {
				t.Fatalf("no log row of %s's tool call: %v", server, err)
			}
			var d map[string]any
			if err := json.Unmarshal([]byte(detail), &d); err != nil || !strings.HasPrefix(summary, "mcp "+server+"__read_board ok") || d["server"] != server || d["ok"] != true || d["duration_seconds"] == nil {
				t.Errorf("log row %q %s (%v)", summary, detail, err)
			}
		}
		var summary, detail string
		var d map[string]any
		if err := db.QueryRow("SELECT summary, detail FROM logs WHERE tier = 3 AND summary LIKE 'mcp junk__read_board%'").Scan(&summary, &detail); err != nil ||
			json.Unmarshal([]byte(detail), &d) != nil || !strings.HasPrefix(summary, "mcp junk__read_board error") || d["ok"] != false || !strings.Contains(detail, "failed during the call") {
			t.Errorf("the call the server answered with garbage: %q %s (%v)", summary, detail, err)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM logs WHERE tier = 1 AND summary LIKE '%\"gone\" cannot be reached%'"); n != 1 {
			t.Errorf("%d log rows say the server that is down was left out, want 1", n)
		}
	})
}

// The servers are stored with the run: a run killed before its resolve
// offers them again on resume without the flags; one started by a
// command is refused without --unconfined.
func TestAResumedRunOffersTheSameMCPServers(t *testing.T) {
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return boardServer() }, nil))
	defer srv.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sc := writeEntries(t, dir, camSteps(t))
	cmd := solveCommand(dir, "run", camGoal, "--provider", "script", "--script", sc, "--budget", "5", "--time", "1h",
		"--mcp", "board="+srv.URL, "--mcp-command", "cam="+self+" "+mcpServerArg, "--unconfined")
	cmd.Env = append(os.Environ(), "SOLVE_CRASH_AFTER=1") // killed after its first call is recorded
	if r := finish(t, cmd); r.code == 0 {
		t.Fatalf("the run was not killed:\n%s%s", r.stdout, r.stderr)
	}
	if r := runSolve(t, dir, "resume", "--provider", "script", "--script", sc); r.code == 0 || !strings.Contains(r.stderr, "give --unconfined to run it, or give the server by its URL with --mcp") {
		t.Fatalf("resume without --unconfined: exit %d, want a refusal naming --unconfined\n%s", r.code, r.stderr)
	}
	r := runSolve(t, dir, "resume", "--provider", "script", "--script", sc, "--unconfined")
	if r.code != 0 || !strings.Contains(r.stdout, ": achieved") {
		t.Fatalf("resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	db := openDB(t, dir)
	if n := count(t, db, "SELECT COUNT(*) FROM logs WHERE tier = 3 AND summary LIKE 'mcp %__read_board ok%'"); n != 2 {
		t.Errorf("%d tool calls logged after resume, want 2", n)
	}
}

// Malformed servers and a command without --unconfined exit 2 before
// anything starts: no kernel database is made.
func TestRunMCPFlagsAreCheckedBeforeAnythingStarts(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--mcp", "https://example.com/mcp"}, "NAME=URL"},
		{[]string{"--mcp", "docs=ftp://example.com/mcp"}, "http://"},
		{[]string{"--mcp", "my__docs=https://example.com/mcp"}, "double underscore"},
		{[]string{"--mcp", "docs=https://a.example/mcp", "--mcp", "docs=https://b.example/mcp"}, "another server"},
		{[]string{"--mcp-command", "fs=npx -y @acme/mcp"}, "--unconfined"},
		{[]string{"--mcp-command", "npx"}, "NAME=CMD"},
	} {
		r := runSolve(t, dir, append([]string{"run", camGoal, "--provider", "script", "--script", "/nonexistent.json"}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, want 2 saying %q\n%s", c.args, r.code, c.want, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "kernel.db")); !os.IsNotExist(err) {
		t.Errorf("a kernel database was made: %v", err)
	}
}
