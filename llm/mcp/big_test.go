package mcp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A server that answers the handshake with 10 MB is told as answering
// too much, naming the limit, at once: not as a server that did not
// answer in time.
func TestAHugeHandshakeAnswerIsToldAsTooMuch(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"big","version":"1"},"instructions":"`))
		_, _ = w.Write([]byte(strings.Repeat("A", 10<<20)))
		_, _ = w.Write([]byte(`"}}`))
	}))
	defer ts.Close()
	start := time.Now()
	_, err := Probe(context.Background(), Server{Name: "big", URL: ts.URL}, Options{ConnectTimeout: 5 * time.Second})
	var u *UnreachableError
	if !errors.As(err, &u) || !strings.Contains(u.Detail, "answered more than 1 MiB to") || time.Since(start) > 4*time.Second {
		t.Fatalf("after %s: %v", time.Since(start).Round(time.Millisecond), err)
	}
}
