package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/blocks"
	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/hermitcrab/secrets"
	"github.com/llmkernels/kernels/hermitcrab/shells"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/pscale"
)

// Version is what props.version reports.
const Version = "hermitcrab-g1-go"

// route is one route of the server: a ServeMux pattern and its handler.
type route struct {
	pattern string
	handler http.HandlerFunc
}

// routeTable is every route the server has.
func (s *Server) routeTable() []route {
	return []route{
		{"GET /{$}", s.serveIndex},
		{"GET /assets/{file}", s.serveAsset},
		{"GET /api/state", s.state},
		{"GET /api/events", s.serveEvents},
		{"POST /api/key", s.postKey},
		{"DELETE /api/key", s.deleteKey},
		{"POST /api/boot", s.postBoot},
		{"POST /api/browser/result", s.browserResult},
		{"POST /api/shell/status", s.shellStatus},
		{"POST /api/call", s.call},
		{"POST /api/claude", s.claude},
		{"POST /api/toolloop", s.toolLoop},
		{"GET /api/source", s.source},
		{"POST /api/recompile", s.recompile},
		{"POST /api/tools", s.setTools},
		{"DELETE /api/tools", s.resetTools},
		{"GET /api/blocks", s.listBlocks},
		{"POST /api/blocks", s.createBlock},
		{"GET /api/blocks/{name}", s.readBlock},
		{"POST /api/blocks/{name}", s.writeBlock},
		{"GET /api/bsp/{name}", s.bsp},
		{"GET /api/resolve/{name}", s.resolve},
		{"GET /api/conversation/{id}", s.loadConversation},
		{"POST /api/conversation/{id}", s.saveConversation},
		{"POST /api/import", s.importEntries},
		{"GET /api/wakes", s.wakes},
		{"POST /api/wakes/seen", s.wakesSeen},
	}
}

// wakes lists the recent wakes, newest first, with the newest the person
// has seen: the page shows those after it as what happened while they
// were away.
func (s *Server) wakes(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	list, err := s.kernel.Wakes().List(ctx, 0, 50)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	seen, err := s.kernel.Wakes().Seen(ctx)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"wakes": list, "seen": seen})
}

// wakesSeen records that the person has seen the wakes up to id.
func (s *Server) wakesSeen(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ID int64 `json:"id"`
	}
	if err := readJSON(r, &body); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if err := s.kernel.Wakes().SetSeen(r.Context(), body.ID); err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func (s *Server) routes(mux *http.ServeMux) {
	for _, r := range s.routeTable() {
		mux.HandleFunc(r.pattern, r.handler)
	}
}

// errStatus maps kernel errors to HTTP statuses: a missing block is 404,
// a refused write 409/413, anything the caller sent wrong 400.
func errStatus(err error) int {
	switch {
	case errors.Is(err, kernel.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, kernel.ErrConflict):
		return http.StatusConflict
	case errors.Is(err, kernel.ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

// authError tells whether err is the provider refusing the API key, so the
// page can offer the key form again.
func authError(err error) bool {
	var apiErr *llm.APIError
	return errors.As(err, &apiErr) && apiErr.Status == http.StatusUnauthorized
}

// writeCallError answers a failed call: a refused key is 401 with "auth"
// set (the page then asks for another key), anything else 502.
func writeCallError(w http.ResponseWriter, err error) {
	if authError(err) {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": err.Error(), "auth": true})
		return
	}
	writeError(w, http.StatusBadGateway, err)
}

func (s *Server) state(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := s.syncKey(); err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	deep, _ := s.kernel.Conversation().TierParams(ctx, prompt.Deep)
	light, _ := s.kernel.Conversation().TierParams(ctx, prompt.Light)
	s.keyMu.Lock()
	from := s.keyFrom
	s.keyMu.Unlock()
	out := map[string]any{
		"csrf": s.csrf, "has_key": s.hasKey(), "key_needed": s.cfg.KeyNeeded, "key_from": from, "version": Version,
		"model": deep.Model, "fast_model": light.Model, "shell": nil,
		"demo": s.cfg.Demo, "provider": s.cfg.Provider, "boot_cost": nil,
	}
	if cost, ok := s.bootCost(ctx, deep.Model); ok {
		out["boot_cost"] = cost
	}
	untouched, err := s.kernel.Shells().Untouched(ctx)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	out["empty_store"] = untouched
	sh, ok, err := s.kernel.Shells().LastGood(ctx)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	if ok {
		if code, err := compileShell(sh.Source); err == nil {
			out["shell"] = map[string]any{"id": sh.ID, "code": code, "source": sh.Source}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// postKey stores a key given on the page and uses it from now on, in place
// of any key before (the environment's included, for this run).
func (s *Server) postKey(w http.ResponseWriter, r *http.Request) {
	if s.refuseKeyInDemo(w) {
		return
	}
	var body struct {
		Key string `json:"key"`
	}
	if err := readJSON(r, &body); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if err := s.kernel.Secrets().SetKey(body.Key); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if err := s.useKey(strings.TrimSpace(body.Key), secrets.FromStored); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	s.log.Info("API key stored", "file", "api_key in the data directory")
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// errDemoKey is the demo's answer to a key given or removed: its data
// directory may be a real instance's (--data), whose key is not the
// demo's to replace.
var errDemoKey = errors.New("the demo does not take keys: it plays a scripted model; start hermitcrab without the demo to use your key")

// refuseKeyInDemo answers a key route 403 in the demo; it reports whether
// it did.
func (s *Server) refuseKeyInDemo(w http.ResponseWriter) bool {
	if s.cfg.Demo {
		writeError(w, http.StatusForbidden, errDemoKey)
	}
	return s.cfg.Demo
}

// deleteKey removes the stored key and stops using it.
func (s *Server) deleteKey(w http.ResponseWriter, _ *http.Request) {
	if s.refuseKeyInDemo(w) {
		return
	}
	if _, err := s.kernel.Secrets().ClearKey(); err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	note := "the key was removed: enter a key to go on"
	if s.cfg.KeyNeeded {
		s.dropKey()
	} else {
		note = "the key was removed (this provider needs none)"
	}
	s.log.Info("API key removed")
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "has_key": s.hasKey(), "note": note})
}

func (s *Server) postBoot(w http.ResponseWriter, _ *http.Request) {
	if err := s.syncKey(); err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	if !s.hasKey() {
		writeError(w, http.StatusBadRequest, errors.New("no API key yet: enter it first"))
		return
	}
	if !s.booting.CompareAndSwap(false, true) {
		writeError(w, http.StatusConflict, errors.New("a boot is already running"))
		return
	}
	go func() {
		defer s.booting.Store(false)
		s.hub.send(event{"type": "status", "text": "waking: a deep-tier call with BOOT", "level": conversation.LevelInfo})
		res, err := s.kernel.Conversation().Boot(s.ctx)
		if err != nil {
			s.log.Warn("boot failed", "err", err)
			s.hub.send(event{"type": "boot_error", "error": err.Error(), "auth": authError(err)})
			return
		}
		s.hub.send(event{"type": "status", "text": fmt.Sprintf("shell %d built; boot %s", res.Shell.ID, res.CostLine()), "level": conversation.LevelSuccess})
	}()
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func (s *Server) browserResult(w http.ResponseWriter, r *http.Request) {
	var res browserResult
	if err := readJSON(r, &res); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if err := s.relay.answer(res); err != nil {
		writeError(w, http.StatusNotFound, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func (s *Server) shellStatus(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ID     int64  `json:"id"`
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if err := readJSON(r, &body); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if err := s.kernel.Shells().Rendered(r.Context(), body.ID, body.Status, body.Error); err != nil {
		writeError(w, errStatus(err), err)
		return
	}
	if body.Status == shells.Failed {
		s.hub.send(event{"type": "status", "text": fmt.Sprintf("shell %d failed to render: %s (the previous shell stays)", body.ID, body.Error), "level": conversation.LevelError})
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func (s *Server) call(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Messages []llm.Message `json:"messages"`
		Tier     int           `json:"tier"`
		// Stream names the call in the progress and delta events the
		// page receives while it runs; "" sends none.
		Stream string `json:"stream"`
	}
	if err := readJSON(r, &body); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if len(body.Messages) == 0 {
		writeError(w, http.StatusBadRequest, errors.New("messages is empty: send at least one user message"))
		return
	}
	if err := s.syncKey(); err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	opts := conversation.CallOptions{Tier: body.Tier}
	if body.Stream != "" {
		opts.OnDelta = s.streamTo(body.Stream)
	}
	res, err := s.kernel.Conversation().Call(r.Context(), body.Messages, opts)
	if err != nil {
		writeCallError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"text": res.Text, "messages": res.Messages, "notes": res.Notes, "limit": res.Limit})
}

// claude is the §7.2 passthrough for props.callAPI: raw Messages API JSON
// in and out, the key added here, after the §7.1 clean-up
// (conversation.Caller.CleanAPIRequest, which also gives a request without tools the
// current ones). With the Anthropic provider the request goes to
// the API with the anthropic-beta values its tools need and the --beta
// values; with others it runs through the kernel's client.
func (s *Server) claude(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, err)
		return
	}
	if err := s.syncKey(); err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	clean, err := s.kernel.Conversation().CleanAPIRequest(r.Context(), raw)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	body := clean.Body
	for _, n := range clean.Notes {
		s.log.Info("callAPI: " + n)
	}
	if s.cfg.Provider != "anthropic" {
		s.claudeViaClient(w, r.Context(), body)
		return
	}
	key := s.passKey()
	if key == "" {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "no API key yet: enter it first", "auth": true})
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, strings.TrimSuffix(s.cfg.BaseURL, "/")+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", key)
	req.Header.Set("anthropic-version", "2023-06-01")
	if betas := clean.HeaderBetas(s.cfg.Betas); len(betas) > 0 {
		req.Header.Set("anthropic-beta", strings.Join(betas, ","))
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		writeError(w, http.StatusBadGateway, fmt.Errorf("reaching the Anthropic API: %w", err))
		return
	}
	defer func() { _ = resp.Body.Close() }() // a response body read to its end or abandoned: nothing to report
	stream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(resp.StatusCode)
	// The answer is kept as it is relayed, to add what it cost to the
	// day's usage as every other call's.
	var kept capture
	if _, err := io.Copy(w, io.TeeReader(resp.Body, &kept)); err != nil {
		// The status is sent; the page sees a cut body. Say why in the log.
		s.log.Warn("relaying the Anthropic API's answer", "err", err)
	}
	if resp.StatusCode != http.StatusOK {
		return
	}
	if model, u, ok := answerUsage(kept.buf.Bytes(), stream); ok {
		s.kernel.Conversation().RecordPageCall(r.Context(), model, u, time.Since(start))
	} else {
		s.log.Warn("callAPI: the API's answer carried no usage that could be read: its cost is not in the day's usage")
	}
}

func (s *Server) claudeViaClient(w http.ResponseWriter, ctx context.Context, body []byte) {
	client := s.kernel.Conversation().PageClient(ctx)
	if client == nil {
		writeError(w, http.StatusBadRequest, errors.New("no LLM client configured"))
		return
	}
	var req llm.Request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if err := llm.CheckRequest(&req); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	call, err := client.Send(ctx, &req)
	if err != nil {
		writeCallError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, call.Response)
}

func (s *Server) toolLoop(w http.ResponseWriter, r *http.Request) {
	var req llm.Request
	if err := readJSON(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if err := s.syncKey(); err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	res, err := s.kernel.Conversation().ToolLoop(r.Context(), &req)
	if err != nil {
		writeCallError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"text": res.Text(), "response": res.Final, "messages": res.Messages, "stop_reason": res.StopReason})
}

func (s *Server) source(w http.ResponseWriter, r *http.Request) {
	src, err := s.kernel.Shells().Source(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"source": src})
}

func (s *Server) recompile(w http.ResponseWriter, r *http.Request) {
	var body struct {
		JSX string `json:"jsx"`
	}
	if err := readJSON(r, &body); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	sh, err := s.kernel.Shells().Recompile(r.Context(), body.JSX)
	if err != nil {
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "id": sh.ID})
}

func (s *Server) setTools(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := readJSON(r, &body); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	tools, err := conversation.ParseToolEntries(body.Tools)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	names, err := s.kernel.Conversation().SetTools(r.Context(), tools)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "tools": names})
}

// resetTools puts the boot tools back (the page's "tools" control, as
// `hermitcrab tools reset`): the way out when the set the LLM chose makes
// every call fail.
func (s *Server) resetTools(w http.ResponseWriter, r *http.Request) {
	reset, err := s.kernel.Conversation().ResetTools(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	if reset {
		s.log.Info("tools reset to the boot set from the page")
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "reset": reset, "tools": conversation.BootTools()})
}

func (s *Server) listBlocks(w http.ResponseWriter, r *http.Request) {
	list, err := s.kernel.Blocks().List(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"blocks": list})
}

func (s *Server) createBlock(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name    string `json:"name"`
		Pscale0 string `json:"pscale0"`
		Place   int    `json:"place"`
	}
	if err := readJSON(r, &body); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if err := s.kernel.Blocks().Create(r.Context(), body.Name, body.Pscale0, body.Place); err != nil {
		writeError(w, errStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func (s *Server) readBlock(w http.ResponseWriter, r *http.Request) {
	ctx, name := r.Context(), r.PathValue("name")
	if path := r.URL.Query().Get("path"); path != "" {
		addr, err := blocks.ParseAddress("path", path)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		node, err := s.kernel.Blocks().ReadNode(ctx, name, addr)
		if err != nil {
			writeError(w, errStatus(err), err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"node": node})
		return
	}
	b, err := s.kernel.Blocks().Raw(ctx, name)
	if err != nil {
		writeError(w, errStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, b)
}

func (s *Server) writeBlock(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Path    any    `json:"path"`
		Content string `json:"content"`
	}
	if err := readJSON(r, &body); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	addr, err := blocks.ParseAddress("path", body.Path)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	v, err := s.kernel.Blocks().WriteAt(r.Context(), r.PathValue("name"), addr, body.Content)
	if err != nil {
		writeError(w, errStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "version": v})
}

func (s *Server) bsp(w http.ResponseWriter, r *http.Request) {
	in := r.URL.Query()
	q, err := pscale.ParseQuery(in.Get("mode"), in.Get("spindle"), in.Get("point"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	res, err := s.kernel.Blocks().BSP(r.Context(), r.PathValue("name"), q)
	if err != nil {
		writeError(w, errStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) resolve(w http.ResponseWriter, r *http.Request) {
	depth, err := blocks.ParseDepth("depth", r.URL.Query().Get("depth"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	res, err := s.kernel.Blocks().Resolve(r.Context(), r.PathValue("name"), depth)
	if err != nil {
		writeError(w, errStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

var conversationID = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

func (s *Server) loadConversation(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !conversationID.MatchString(id) {
		writeError(w, http.StatusBadRequest, fmt.Errorf("conversation id %q: use 1-128 of A-Z a-z 0-9 _ . -", id))
		return
	}
	msgs, err := s.kernel.Conversation().Conversation(r.Context(), id)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	if msgs == nil {
		msgs = []llm.Message{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": msgs})
}

func (s *Server) saveConversation(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !conversationID.MatchString(id) {
		writeError(w, http.StatusBadRequest, fmt.Errorf("conversation id %q: use 1-128 of A-Z a-z 0-9 _ . -", id))
		return
	}
	var body struct {
		Messages []llm.Message `json:"messages"`
	}
	if err := readJSON(r, &body); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if err := s.kernel.Conversation().SaveConversation(r.Context(), id, body.Messages); err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// importEntries imports this browser's localStorage (hc:* blocks, G0
// memory) as a dump, replacing the seeded defaults it covers.
func (s *Server) importEntries(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Entries map[string]string `json:"entries"`
	}
	if err := readJSON(r, &body); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	data, err := json.Marshal(body.Entries)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	res, err := s.kernel.Blocks().Import(r.Context(), []blocks.ImportSource{{Name: "localStorage.json", Data: data}}, true)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
