package network

import (
	"context"
	"encoding/json"

	"github.com/llmkernels/kernels/hermitcrab/beach"
	"github.com/llmkernels/kernels/hermitcrab/tool"
	"github.com/llmkernels/kernels/llm"
)

// The network tools: thin adapters over network.go, one set_tools away
// (capabilities 0.8 describes them). What another agent wrote comes back
// as JSON strings, so it stays data in the tool result; the caller makes
// it inert (tool.Inert).

// Tools are the network tools.
func (k *Agent) Tools() []llm.ToolHandler {
	var out []llm.ToolHandler
	add := func(name, desc string, in json.RawMessage, run llm.ToolFunc) {
		out = append(out, llm.ToolHandler{Tool: llm.Tool{Name: name, Description: desc, InputSchema: in}, Run: run})
	}
	coords := `{"type":"array","items":{"type":"string"},"description":"nodes of your blocks, \"BLOCK ADDRESS\", e.g. \"purpose 0.2\""}`
	add("passport_publish", "Sign and publish your passport on the beach: a name, a description, and offers and needs as nodes of your own blocks (published with their text).",
		tool.Schema(`"name":{"type":"string"},"description":{"type":"string"},"offers":`+coords+`,"needs":`+coords, "name"),
		tool.Func(k.toolPassportPublish))
	add("passport_read", "An agent's passport from the beach, verified; without agent, the passports published most recently.",
		tool.Schema(`"agent":{"type":"string","description":"an agent id, hc…"},"limit":{"type":"integer","minimum":1,"maximum":500}`),
		tool.Func(k.toolPassportRead))
	add("beach_mark", "Leave a signed mark on a URL: you were there, for this purpose (only the URL's hash is sent).",
		tool.Schema(`"url":{"type":"string"},"purpose":{"type":"string"}`, "url"), tool.Func(k.toolBeachMark))
	add("beach_read", "Who marked a URL and why, newest first, verified.",
		tool.Schema(`"url":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":500}`, "url"), tool.Func(k.toolBeachRead))
	add("inbox_send", "Sign and send a message: a grain_probe, grain_response or general; reply_to (a message's #) answers its sender. spindle is a node of your blocks the message is about.",
		tool.Schema(`"to":{"type":"string","description":"an agent id, hc…"},"type":{"type":"string","enum":["grain_probe","grain_response","general"]},"content":{"type":"string"},"spindle":{"type":"string","description":"\"BLOCK ADDRESS\""},"reply_to":{"type":"integer"}`, "content"),
		tool.Func(k.toolInboxSend))
	add("inbox_check", "Your new messages from the beach, verified (each has a # for reply_to); all: the last 20 received.",
		tool.Schema(`"all":{"type":"boolean"}`), tool.Func(k.toolInboxCheck))
	add("savepoint_save", "Leave an encrypted, signed save point of all your blocks with the beach (replacing the last); only your key opens it.",
		tool.Schema(""), tool.Func(k.toolSavePoint))
	return out
}

func (k *Agent) toolPassportPublish(ctx context.Context, args PassportSpec) (any, error) {
	ack, p, err := k.PublishPassport(ctx, args)
	if err != nil {
		return nil, err
	}
	return map[string]any{"success": true, "agent": ack.Agent, "published": p}, nil
}

func (k *Agent) toolPassportRead(ctx context.Context, args struct {
	Agent string `json:"agent"`
	Limit int    `json:"limit"`
}) (any, error) {
	if args.Agent != "" {
		return k.Passport(ctx, args.Agent)
	}
	if args.Limit <= 0 {
		args.Limit = 20
	}
	good, bad, err := k.Passports(ctx, args.Limit)
	if err != nil {
		return nil, err
	}
	return withRefused(map[string]any{"passports": passportViews(good)}, bad), nil
}

// withRefused adds the entries that did not verify, when there are any.
func withRefused(out map[string]any, bad []beach.Refused) map[string]any {
	if len(bad) > 0 {
		out["refused"] = bad
	}
	return out
}

// passportView is a passport without its envelope, for the LLM.
type passportView struct {
	Agent     string         `json:"agent"`
	Published string         `json:"published"`
	Passport  beach.Passport `json:"passport"`
}

func passportViews(list []beach.Verified[beach.Passport]) []passportView {
	out := make([]passportView, 0, len(list))
	for _, v := range list {
		out = append(out, passportView{Agent: v.Agent, Published: v.Time.UTC().Format("2006-01-02T15:04:05Z"), Passport: v.Body})
	}
	return out
}

func (k *Agent) toolBeachMark(ctx context.Context, args struct {
	URL     string `json:"url"`
	Purpose string `json:"purpose"`
}) (any, error) {
	m, err := k.Mark(ctx, args.URL, args.Purpose)
	if err != nil {
		return nil, err
	}
	return map[string]any{"success": true, "url_hash": m.URLHash, "agent": m.Agent}, nil
}

func (k *Agent) toolBeachRead(ctx context.Context, args struct {
	URL   string `json:"url"`
	Limit int    `json:"limit"`
}) (any, error) {
	if args.Limit <= 0 {
		args.Limit = 20
	}
	good, bad, err := k.Marks(ctx, args.URL, args.Limit)
	if err != nil {
		return nil, err
	}
	marks := make([]map[string]string, 0, len(good))
	for _, v := range good {
		marks = append(marks, map[string]string{"agent": v.Agent, "time": v.Time.UTC().Format("2006-01-02T15:04:05Z"), "purpose": v.Body.Purpose})
	}
	return withRefused(map[string]any{"url_hash": beach.URLHash(args.URL), "marks": marks}, bad), nil
}

func (k *Agent) toolInboxSend(ctx context.Context, args Outgoing) (any, error) {
	ack, m, err := k.SendMessage(ctx, args)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"success": true, "to": m.To, "type": m.Type, "nonce": ack.Nonce}
	if m.Spindle != "" {
		out["spindle"] = m.Spindle
	}
	if m.RespondingTo != "" {
		out["responding_to"] = m.RespondingTo
	}
	return out, nil
}

func (k *Agent) toolInboxCheck(ctx context.Context, args struct {
	All bool `json:"all"`
}) (any, error) {
	return k.CheckInbox(ctx, args.All)
}

func (k *Agent) toolSavePoint(ctx context.Context, _ struct{}) (any, error) {
	ack, n, err := k.SaveToBeach(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"success": true, "bytes": n, "signed": ack.Time}, nil
}
