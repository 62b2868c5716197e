package main_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpServerArg makes the test binary a stdio MCP server (TestMain): the
// server solve hire --mcp-command starts in these tests.
const mcpServerArg = "mcp-test-server"

// boardServer is an MCP server with one tool, read_board: a thermal
// reading that quotes its arguments.
func boardServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "solve-mcp-test", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "read_board", Description: "Read a board's hot spot with the thermal camera.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"board": map[string]any{"type": "string"}}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hot spot 71C; arguments " + string(req.Params.Arguments)}}}, nil
		})
	return srv
}

// serveMCP serves boardServer on stdin and stdout.
func serveMCP() {
	if err := boardServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "test MCP server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// A person answers a capability request with a tool of an MCP server
// (stdio, started by the command given): it is registered as a resolver
// of the capability, both waiting leaves take it, and the tool's answer is
// their output; the KG counts its successes. Malformed values are refused
// with exit 2, a server that does not start with exit 1, nothing hired.
// The server's command is outside the run's sandbox: without --unconfined
// the run refuses to start it, saying so.
func TestAnMCPToolHiredForACapabilityResolvesTheWaitingNodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root, id := boardsWaiting(t, dir)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{{"--mcp", "ftp://example.com/mcp"}, {"--mcp", "http://x", "--mcp-command", "x"}, {"--tool", "read_board"}} {
		if r := runSolve(t, dir, append([]string{"hire", id}, bad...)...); r.code != 2 {
			t.Errorf("hire %v: exit %d, want 2\n%s", bad, r.code, r.stderr)
		}
	}
	if r := runSolve(t, dir, "hire", id, "--mcp-command", "/nonexistent/mcp-server"); r.code != 1 || !strings.Contains(r.stderr, "nothing was hired") {
		t.Errorf("an MCP command that does not start: exit %d\n%s", r.code, r.stderr)
	}
	if r := runSolve(t, dir, "hire", id, "--mcp-command", self+" "+mcpServerArg, "--tool", "no_such_tool"); r.code != 1 || !strings.Contains(r.stderr, "read_board") {
		t.Errorf("a tool the server lacks: exit %d\n%s", r.code, r.stderr)
	}
	db := openDB(t, dir)
	if n := count(t, db, "SELECT COUNT(*) FROM resolvers WHERE built_by = 'human'"); n != 0 {
		t.Fatalf("%d resolvers hired by the failed answers", n)
	}
	a := runSolve(t, dir, "hire", id, "--mcp-command", self+" "+mcpServerArg, "--tool", "read_board", "--cost-per-call", "0.01")
	if a.code != 0 || !strings.Contains(a.stdout, "registered resolver human-thermal_measurement-1") {
		t.Fatalf("hire: exit %d\n%s%s", a.code, a.stdout, a.stderr)
	}
	sc := writeScript(t, dir, boardsSteps()...)
	confined := runSolve(t, dir, "resume", root, "--provider", "script", "--script", sc)
	if confined.code != 4 || !strings.Contains(confined.stderr, "human-thermal_measurement-1: unconfined only") {
		t.Fatalf("resume without --unconfined: exit %d, want 4 saying the MCP command needs --unconfined\n%s\n%s", confined.code, confined.stdout, confined.stderr)
	}
	// The failed tool is asked for anew; the person hires it again and
	// resumes with --unconfined.
	h := runSolve(t, dir, "hire")
	id = strings.Fields(strings.TrimPrefix(h.stdout, "request "))[0]
	if a := runSolve(t, dir, "hire", id, "--mcp-command", self+" "+mcpServerArg, "--tool", "read_board", "--cost-per-call", "0.01"); a.code != 0 {
		t.Fatalf("hire again: exit %d\n%s%s", a.code, a.stdout, a.stderr)
	}
	// The leaves' second attempts (the first failed unconfined) are judged.
	steps := boardsSteps()
	for _, g := range []string{boardA, boardB} {
		steps = append(steps, step{OpVerify, g, 2, m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": 0.9, "detail": "71C"}}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "a reading"}})
	}
	sc = writeScript(t, dir, steps...)
	res := runSolve(t, dir, "resume", root, "--unconfined", "--provider", "script", "--script", sc)
	if res.code != 0 || !strings.Contains(res.stdout, ": achieved") {
		t.Fatalf("resume --unconfined: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	invariants(t, dir, root)
	if n := count(t, db, "SELECT COUNT(*) FROM resolution_attempts WHERE resolver_id = 'human-thermal_measurement-2' AND verdict = 'SAT'"); n != 2 {
		t.Errorf("the MCP tool resolved %d leaves, want both", n)
	}
	var ok, cost float64
	if err := db.QueryRow("SELECT success_count, cost_per_invocation FROM resolvers WHERE id = 'human-thermal_measurement-2'").Scan(&ok, &cost); err != nil || ok != 2 || cost != 0.01 {
		t.Errorf("the hired MCP tool's record: %v successes at $%v a call (%v)", ok, cost, err)
	}
	var uri string
	if err := db.QueryRow(`SELECT a.uri FROM artifacts a JOIN resolution_attempts r ON r.output_artifact_id = a.id
		WHERE r.resolver_id = 'human-thermal_measurement-2' LIMIT 1`).Scan(&uri); err != nil {
		t.Fatal(err)
	}
	if out, err := os.ReadFile(filepath.Join(dir, uri)); err != nil || !strings.Contains(string(out), "hot spot 71C; arguments {}") {
		t.Errorf("the leaf's output is not the tool's answer: %q (%v)", out, err)
	}
}

// The same over streamable HTTP: a server hired by its URL is reached by
// the kernel itself, so a confined run uses it.
func TestAnMCPToolHiredByURLResolvesInAConfinedRun(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return boardServer() }, nil))
	defer srv.Close()
	dir := t.TempDir()
	root, id := boardsWaiting(t, dir)
	if a := runSolve(t, dir, "hire", id, "--mcp", srv.URL); a.code != 0 || !strings.Contains(a.stdout, "registered resolver human-thermal_measurement-1") {
		t.Fatalf("hire --mcp URL (its only tool): exit %d\n%s%s", a.code, a.stdout, a.stderr)
	}
	sc := writeScript(t, dir, boardsSteps()...)
	if res := runSolve(t, dir, "resume", root, "--provider", "script", "--script", sc); res.code != 0 || !strings.Contains(res.stdout, ": achieved") {
		t.Fatalf("resume: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	db := openDB(t, dir)
	if n := count(t, db, "SELECT COUNT(*) FROM resolution_attempts WHERE resolver_id = 'human-thermal_measurement-1' AND verdict = 'SAT'"); n != 2 {
		t.Errorf("the MCP tool resolved %d leaves, want both", n)
	}
}
