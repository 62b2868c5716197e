package web

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// bodyRoutes are the routes that read a JSON body without calling the
// LLM.
var bodyRoutes = []string{"/api/browser/result", "/api/shell/status", "/api/tools", "/api/blocks", "/api/blocks/stash",
	"/api/conversation/fuzz", "/api/import", "/api/wakes/seen", "/api/key", "/api/recompile"}

// Any body the page may send is answered in JSON without a server error:
// what the server cannot take is refused with a 4xx saying why.
func FuzzRequestBodies(f *testing.F) {
	for _, body := range []string{
		`{"id":"abc","content":"ok","is_error":false}`, `{"id":1,"status":"failed","error":"ReferenceError"}`,
		`{"tools":["bsp",{"name":"web_search","type":"web_search_20260209"}]}`, `{"tools":[1]}`,
		`{"name":"garden","pscale0":"My garden.","place":1}`, `{"name":"../x","pscale0":""}`,
		`{"path":"0.1","content":"x"}`, `{"path":0.12,"content":"x"}`, `{"path":null,"content":"x"}`, `{"path":"0..9.","content":1}`,
		`{"messages":[{"role":"user","content":"hi"}]}`, `{"messages":[{"role":"user","content":[{"type":"tool_result"}]}]}`,
		`{"entries":{"hc:purpose":"{\"place\":1,\"tree\":{\"0\":\"x\"}}","hcmem:/memories/M-1.md":"one"}}`, `{"entries":{"hc:x":"{"}}`,
		`{"id":9007199254740993}`, `{"key":"sk-ant-test"}`, `{"key":" "}`, `{"jsx":"function A(){ return <div/> }"}`, `{"jsx":"<"}`,
		`null`, `[]`, `"x"`, `{`, "", `{"a":1}{"b":2}`,
	} {
		for i := range bodyRoutes {
			f.Add(i, body)
		}
	}
	srv, ts := testServer(f, `{"responses":[]}`)
	f.Fuzz(func(t *testing.T, which int, body string) {
		route := bodyRoutes[(which%len(bodyRoutes)+len(bodyRoutes))%len(bodyRoutes)]
		req, _ := http.NewRequest(http.MethodPost, ts.URL+route, bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", ts.URL)
		req.Header.Set("X-CSRF-Token", srv.csrf)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 500 || resp.Header.Get("Content-Type") != "application/json" || !json.Valid(answer) {
			t.Fatalf("POST %s %q: %d %s %q", route, body, resp.StatusCode, resp.Header.Get("Content-Type"), answer)
		}
	})
}
