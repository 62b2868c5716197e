package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// ErrStalled is the cause of the connection error of a request on which
// nothing arrived for the stall limit.
var ErrStalled = errors.New("the answer stalled")

// StreamWatch watches one streaming request for an adapter: it cancels the
// request's context when nothing arrives for the stall limit (the answer
// not beginning, or its stream pausing), and keeps aside the whole answer
// of a server that answered without streaming.
type StreamWatch struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	limit  time.Duration
	timer  *time.Timer
	parent context.Context
	// Whole is the body of a successful answer that was not an event
	// stream (a server that ignores "stream"); nil for a stream.
	Whole []byte
}

// WatchStream returns the context to send one request in, and its watch.
// Call Stop when the request is done.
func WatchStream(ctx context.Context, limit time.Duration) (context.Context, *StreamWatch) {
	attempt, cancel := context.WithCancelCause(ctx)
	w := &StreamWatch{ctx: attempt, cancel: cancel, limit: limit, parent: ctx}
	w.timer = time.AfterFunc(limit, func() { cancel(ErrStalled) })
	return attempt, w
}

// Response takes the answer's HTTP response, from the adapter's
// middleware: each piece read from its body counts as arriving, and the
// whole body of a successful answer that is not an event stream is read
// aside into Whole, leaving the response an empty body.
func (w *StreamWatch) Response(res *http.Response) error {
	if res == nil || res.Body == nil {
		return nil
	}
	w.alive()
	res.Body = &arrivals{ReadCloser: res.Body, alive: w.alive}
	if res.StatusCode/100 != 2 || strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		return nil
	}
	whole, err := io.ReadAll(res.Body)
	_ = res.Body.Close() // read whole: nothing to report
	res.Body = http.NoBody
	w.Whole = append([]byte{}, whole...)
	return err
}

// Stalled reports whether the request was cancelled because nothing
// arrived for the stall limit (and not by its caller).
func (w *StreamWatch) Stalled() bool {
	return w.parent.Err() == nil && errors.Is(context.Cause(w.ctx), ErrStalled)
}

// StallError is the connection error of a stalled request, naming where
// it was sent.
func (w *StreamWatch) StallError(where string) error {
	return ConnectionError(fmt.Errorf("nothing arrived from %s for %s: %w", where, w.limit, ErrStalled))
}

// Stop ends the watch and the request's context.
func (w *StreamWatch) Stop() {
	w.timer.Stop()
	w.cancel(nil)
}

func (w *StreamWatch) alive() { w.timer.Reset(w.limit) }

// arrivals tells the watch each time a piece of the answer arrives.
type arrivals struct {
	io.ReadCloser
	alive func()
}

func (b *arrivals) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.alive()
	}
	return n, err
}
