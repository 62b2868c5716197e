package llmtest

import (
	"strings"
	"testing"
)

const servedUse = `{"type":"tool_use","id":"toolu_1","name":"f","input":{"q":"a<b"},"caller":{"type":"code_execution_20250825","tool_id":"srvtoolu_1"}}`

// exchange posts a first request, then a second whose assistant turn is
// turn, answering toolu_1, and returns the server.
func exchange(t *testing.T, turn string) *Server {
	t.Helper()
	srv := NewServer(mustParse(t, `{"responses":[{"content":[{"type":"text","text":"Calling."},`+servedUse+`]},{"content":[{"type":"text","text":"done"}]}]}`))
	t.Cleanup(srv.Close)
	head := `{"model":"` + testModel + `","max_tokens":64,"tools":[{"name":"f","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"go"}`
	if r := post(t, srv, validHeaders(), head+`]}`); r.status != 200 {
		t.Fatalf("first: %d %s", r.status, r.body)
	}
	second := head + `,{"role":"assistant","content":` + turn + `},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}]}`
	if r := post(t, srv, validHeaders(), second); r.status != 200 {
		t.Fatalf("second: %d %s", r.status, r.body)
	}
	return srv
}

func TestCheckRoundTripsAcceptsTheSameBytesUpToSpacingAndEscapes(t *testing.T) {
	srv := exchange(t, `[{"type": "text", "text": "Calling."}, {"type":"tool_use","id":"toolu_1","name":"f","input":{"q":"a\u003cb"},"caller":{"type":"code_execution_20250825","tool_id":"srvtoolu_1"}}]`)
	if err := srv.CheckRoundTrips(); err != nil {
		t.Fatalf("an exact echo was reported: %v", err)
	}
}

func TestCheckRoundTripsReportsAChangedOrIncompleteAnswer(t *testing.T) {
	for name, c := range map[string]struct{ turn, want string }{
		"caller dropped": {`[{"type":"text","text":"Calling."},{"type":"tool_use","id":"toolu_1","name":"f","input":{"q":"a<b"}}]`,
			`block 1 came back as`},
		"members reordered": {`[{"type":"text","text":"Calling."},{"id":"toolu_1","type":"tool_use","name":"f","input":{"q":"a<b"},"caller":{"type":"code_execution_20250825","tool_id":"srvtoolu_1"}}]`,
			`block 1 came back as`},
		"text block dropped": {`[` + servedUse + `]`, `blocks were dropped, added or reordered: served [text tool_use], the turn has [tool_use]`},
	} {
		t.Run(name, func(t *testing.T) {
			err := exchange(t, c.turn).CheckRoundTrips()
			if err == nil || !strings.Contains(err.Error(), "request 2: the answer to request 1") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one naming request 2 and %q", err, c.want)
			}
		})
	}
}
