package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/llm"
)

// streamed sends req as a streaming Chat Completions request and returns
// the answer its chunks assemble into, handing the pieces to req.OnDelta.
// A server that answers with a whole completion is read as one (wholeBody
// set). refused is set, with no error, when the server refused the
// streaming request for streaming (it does not stream): the caller sends
// it again without.
func (p *Provider) streamed(ctx context.Context, req *llm.Request, params oai.ChatCompletionNewParams) (resp *llm.Response, refused bool, err error) {
	attempt, watch := llm.WatchStream(ctx, p.timeout)
	defer watch.Stop()
	var httpResp *http.Response
	sent := false // set once the SDK hands the request to the HTTP client
	observe := func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		sent = true
		res, err := next(r)
		return res, errors.Join(err, watch.Response(res))
	}
	params.StreamOptions = oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)}
	stream := p.completions.NewStreaming(attempt, params,
		option.WithResponseInto(&httpResp), option.WithMiddleware(observe))
	defer func() { _ = stream.Close() }() // read to its end or abandoned: nothing to report
	acc := &chunks{onDelta: req.OnDelta}
	for stream.Next() {
		acc.add(stream.Current())
	}
	if err := stream.Err(); err != nil {
		if watch.Stalled() {
			return nil, false, watch.StallError(p.endpoint())
		}
		if refusesStreaming(err) {
			return nil, true, nil
		}
		return nil, false, p.mapError(ctx, err, sent, httpResp)
	}
	if watch.Whole != nil {
		resp, err := p.wholeAnswer(watch.Whole, httpResp, req)
		return resp, false, err
	}
	if acc.finish == "" {
		return nil, false, llm.ConnectionError(fmt.Errorf("%s: %w", p.endpoint(), llm.ErrStreamCut))
	}
	acc.stop()
	resp, err = acc.answer.response(req.Model)
	return resp, false, err
}

// wholeAnswer reads a whole chat completion that answered a streaming
// request: the server does not stream, so later requests go without.
func (p *Provider) wholeAnswer(body []byte, httpResp *http.Response, req *llm.Request) (*llm.Response, error) {
	var c oai.ChatCompletion
	if err := json.Unmarshal(body, &c); err != nil || !c.JSON.Choices.Valid() {
		var header http.Header
		status := http.StatusOK
		if httpResp != nil {
			header, status = httpResp.Header, httpResp.StatusCode
		}
		apiErr := newAPIError(status, header, "invalid_response", "", "", nil)
		apiErr.Message = "the server's answer is not a usable chat completion: " + clip.Line(string(body), 300)
		return nil, apiErr
	}
	resp, err := toResponse(&c, req.Model)
	if err != nil {
		return nil, err
	}
	return p.arrivedWhole(resp, req)
}

// arrivedWhole takes an answer that arrived whole: it switches the
// provider to plain requests and says so, once, and hands its pieces to
// req.OnDelta.
func (p *Provider) arrivedWhole(resp *llm.Response, req *llm.Request) (*llm.Response, error) {
	if !p.plain.Swap(true) {
		resp.Notes = append(resp.Notes, fmt.Sprintf("%s does not stream: answers arrive whole, and requests are sent without streaming", p.endpoint()))
	}
	if err := llm.EmitDeltas(resp, req.OnDelta); err != nil {
		return nil, err
	}
	return resp, nil
}

// refusesStreaming reports whether err is a server's refusal of a
// streaming request that names streaming: a server that cannot stream.
func refusesStreaming(err error) bool {
	var e *oai.Error
	if !errors.As(err, &e) || (e.StatusCode != 400 && e.StatusCode != 422 && e.StatusCode != 501) {
		return false
	}
	text := e.Message + " " + e.RawJSON()
	if e.Response != nil && e.Response.Body != nil {
		body, _ := io.ReadAll(io.LimitReader(e.Response.Body, 64<<10))
		e.Response.Body = io.NopCloser(bytes.NewReader(body)) // still readable for the error
		text += " " + string(body)
	}
	return strings.Contains(strings.ToLower(text), "stream")
}

// chunks assembles a stream's chunks into the answer of its first choice,
// handing the pieces on: the text as one text block, then each tool call
// as a tool_use block, in the order the response will hold them when the
// text comes first, as it does.
type chunks struct {
	answer
	onDelta   func(llm.Delta)
	texted    bool  // the text block has started
	textBlock int   // its index
	callBlock []int // each tool call's block index; -1 before it starts
	started   int   // blocks started
}

func (c *chunks) emit(d llm.Delta) {
	if c.onDelta != nil {
		c.onDelta(d)
	}
}

func (c *chunks) add(chunk oai.ChatCompletionChunk) {
	if c.id == "" {
		c.id = chunk.ID
	}
	if c.model == "" {
		c.model = chunk.Model
	}
	// The last usage given wins: a final usage chunk (include_usage), or
	// the running totals some servers put on every chunk.
	if u := chunk.Usage; u.PromptTokens > 0 || u.CompletionTokens > 0 {
		c.usage = u
	}
	for _, choice := range chunk.Choices {
		if choice.Index != 0 {
			continue
		}
		d := choice.Delta
		switch {
		case d.Content != "":
			c.content += d.Content
			c.text(d.Content)
		case d.Refusal != "":
			c.refusal += d.Refusal
			if c.content == "" {
				c.text(d.Refusal)
			}
		}
		for _, tc := range d.ToolCalls {
			i := max(int(tc.Index), 0) // some servers number a lone call -1
			if i > len(c.calls)+128 {
				continue // a sparse index no real stream sends
			}
			for len(c.calls) <= i {
				c.calls = append(c.calls, toolCall{})
				c.callBlock = append(c.callBlock, -1)
			}
			call := &c.calls[i]
			if tc.ID != "" {
				call.id = tc.ID
			}
			if tc.Type != "" {
				call.typ = tc.Type
			}
			call.name += tc.Function.Name
			if c.callBlock[i] < 0 && call.name != "" {
				c.callBlock[i] = c.start()
				c.emit(llm.Delta{Kind: llm.DeltaBlockStart, Index: c.callBlock[i], Block: llm.BlockToolUse, Name: call.name, ID: call.id})
			}
			call.args += tc.Function.Arguments
			if tc.Function.Arguments != "" && c.callBlock[i] >= 0 {
				c.emit(llm.Delta{Kind: llm.DeltaToolInput, Index: c.callBlock[i], Block: llm.BlockToolUse, Name: call.name, ID: call.id, Text: tc.Function.Arguments})
			}
		}
		if choice.FinishReason != "" {
			c.finish = choice.FinishReason
		}
	}
}

func (c *chunks) start() int {
	c.started++
	return c.started - 1
}

func (c *chunks) text(piece string) {
	if !c.texted {
		c.texted = true
		c.textBlock = c.start()
		c.emit(llm.Delta{Kind: llm.DeltaBlockStart, Index: c.textBlock, Block: llm.BlockText})
	}
	c.emit(llm.Delta{Kind: llm.DeltaText, Index: c.textBlock, Block: llm.BlockText, Text: piece})
}

// stop says every block is complete.
func (c *chunks) stop() {
	if c.texted {
		c.emit(llm.Delta{Kind: llm.DeltaBlockStop, Index: c.textBlock, Block: llm.BlockText})
	}
	for i, b := range c.callBlock {
		if b >= 0 {
			c.emit(llm.Delta{Kind: llm.DeltaBlockStop, Index: b, Block: llm.BlockToolUse, Name: c.calls[i].name, ID: c.calls[i].id})
		}
	}
}
