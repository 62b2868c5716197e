package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// embedServer answers embeddings with vec(text), counting requests; nil
// from vec means: never answer (until the test ends).
func embedServer(t *testing.T, vec func(text string) []float64) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		type item struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		var data []item
		for i, in := range req.Input {
			v := vec(in)
			if v == nil {
				select {
				case <-done:
				case <-r.Context().Done():
				}
				return
			}
			data = append(data, item{i, v})
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	return srv, &calls
}

func catMemories(t *testing.T, s *Store) string {
	t.Helper()
	id, err := s.Append(Memory{Timestamp: t0, Author: External, Weight: 0.9, Description: "my cat is named Miso"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		s.Append(Memory{Timestamp: t0.Add(time.Duration(i+1) * time.Minute), Author: Self, Weight: 0.9, Description: fmt.Sprintf("weather note %d", i)})
	}
	return id
}

// An endpoint that never answers costs one timeout: the step falls back
// to full text, and the next steps do not wait on it again until the
// cool-down has passed. (The steps that retrieve run to completion even
// after Ctrl-C, so without a timeout they would wait for ever.)
func TestAnEmbeddingEndpointThatHangsCostsOneTimeout(t *testing.T) {
	srv, calls := embedServer(t, func(string) []float64 { return nil })
	e := &Embedder{URL: srv.URL, Model: "m", Timeout: 200 * time.Millisecond, Cooldown: time.Hour}
	s := openStore(t, t.TempDir(), Options{Embedder: e})
	catMemories(t, s)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		done := make(chan struct{})
		var r *Retrieval
		var err error
		go func() { r, err = s.Retrieve(ctx, Query{Text: "my cat", TopK: 1}); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("retrieval %d still waits on the endpoint after a minute", i+1)
		}
		if err != nil || len(r.Relevant) != 1 || !strings.Contains(r.Mode, "embeddings failed") {
			t.Fatalf("retrieval %d = %+v, %v; want a full-text fallback that says why", i+1, r, err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the endpoint was called %d times, want once (then the cool-down)", n)
	}
	// Once the cool-down has passed it is tried again.
	e.Cooldown = time.Nanosecond
	if _, err := s.Retrieve(ctx, Query{Text: "my cat", TopK: 1}); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the endpoint was called %d times, want a second try after the cool-down", n)
	}
}

// Vectors of different sizes are not comparable: an answer mixing them
// is refused, and vectors stored from an endpoint that now answers
// another size (the model behind the name changed) are made again.
func TestEmbeddingsOfTheWrongSizeAreRefusedOrMadeAgain(t *testing.T) {
	mixed, _ := embedServer(t, func(text string) []float64 {
		if strings.Contains(text, "cat") {
			return []float64{1, 0, 0}
		}
		return []float64{0, 1}
	})
	_, err := (&Embedder{URL: mixed.URL, Model: "m"}).Embed(context.Background(), []string{"cat", "dog"})
	if err == nil || !strings.Contains(err.Error(), "dimensions") {
		t.Fatalf("an answer mixing 3- and 2-dimensional vectors: err = %v, want a refusal", err)
	}

	srv, _ := embedServer(t, func(text string) []float64 {
		if strings.Contains(text, "cat") || strings.Contains(text, "feline") {
			return []float64{1, 0}
		}
		return []float64{0, 1}
	})
	s := openStore(t, t.TempDir(), Options{Embedder: &Embedder{URL: srv.URL, Model: "m"}})
	cat := catMemories(t, s)
	ctx := context.Background()
	if r, err := s.Retrieve(ctx, Query{Text: "feline", TopK: 1}); err != nil || len(r.Relevant) != 1 || r.Relevant[0].ID != cat {
		t.Fatalf("2 dimensions: %+v, %v", r, err)
	}
	// The endpoint now answers 3 dimensions, with the axes swapped: the
	// stored 2-dimensional vectors would rank the weather first.
	srv2, _ := embedServer(t, func(text string) []float64 {
		if strings.Contains(text, "cat") || strings.Contains(text, "feline") {
			return []float64{0, 0, 1}
		}
		return []float64{1, 0, 0}
	})
	s.opts.Embedder = &Embedder{URL: srv2.URL, Model: "m"}
	r, err := s.Retrieve(ctx, Query{Text: "feline", TopK: 1})
	if err != nil || len(r.Relevant) != 1 || r.Relevant[0].ID != cat || !strings.HasPrefix(r.Mode, ModeEmbeddings) {
		t.Fatalf("after the endpoint changed size: %+v, %v; want the cat memory, by embeddings", r, err)
	}
}
