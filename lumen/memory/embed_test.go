package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
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

// gatedServer answers the query "my cat" at once and holds every text of
// a memory until open is called; it counts the memory texts it was sent
// and the most held at once (one per request: the rest of a request's
// texts come after the first).
type gatedServer struct {
	*httptest.Server
	release                    chan struct{}
	once                       sync.Once
	sent, waiting, mostWaiting atomic.Int64
}

func newGatedServer(t *testing.T) *gatedServer {
	g := &gatedServer{release: make(chan struct{})}
	g.Server, _ = embedServer(t, func(text string) []float64 {
		if text != "my cat" {
			g.sent.Add(1)
			n := g.waiting.Add(1)
			g.mostWaiting.Store(max(g.mostWaiting.Load(), n))
			<-g.release
			g.waiting.Add(-1)
		}
		if strings.Contains(text, "cat") {
			return []float64{0, 1}
		}
		return []float64{1, 0}
	})
	t.Cleanup(g.open) // before the server closes: it waits for held requests
	return g
}

func (g *gatedServer) open() { g.once.Do(func() { close(g.release) }) }

// manyMemories writes n memories (one about a cat) as lines an earlier
// run wrote, without an index.
func manyMemories(t *testing.T, dir string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		desc := fmt.Sprintf("weather note %d", i)
		if i == 0 {
			desc = "my cat is named Miso"
		}
		if _, err := appendLine(dir, Memory{Timestamp: t0.Add(time.Duration(i) * time.Second), Author: External, Weight: 0.5, Description: desc}); err != nil {
			t.Fatal(err)
		}
	}
}

// retrieveWithin runs a retrieval that must not wait for the memories'
// embeddings: a guard against a hang, not a speed target.
func retrieveWithin(t *testing.T, s *Store, q Query) *Retrieval {
	t.Helper()
	type answer struct {
		r   *Retrieval
		err error
	}
	got := make(chan answer, 1)
	go func() {
		r, err := s.Retrieve(context.Background(), q)
		got <- answer{r, err}
	}()
	select {
	case a := <-got:
		if a.err != nil {
			t.Fatal(a.err)
		}
		return a.r
	case <-time.After(30 * time.Second):
		t.Fatal("the retrieval waited for every memory to be embedded")
		return nil
	}
}

// An endpoint configured on an instance with many memories: the first
// retrieval answers at once from full text, saying the memories are being
// embedded in the background and how far it got; the vectors are stored
// batch by batch; once all are made, retrieval ranks by embeddings.
func TestManyMemoriesWithoutVectorsAreEmbeddedInTheBackground(t *testing.T) {
	dir := t.TempDir()
	manyMemories(t, dir, 300)
	g := newGatedServer(t)
	s := openStore(t, dir, Options{Embedder: &Embedder{URL: g.URL, Model: "m", Batch: 64}})
	q := Query{Text: "my cat", TopK: 1}
	r := retrieveWithin(t, s, q)
	if !strings.HasPrefix(r.Mode, ModeFullText) || r.Pending == nil || !r.Pending.Background || r.Pending.Total != 300 || r.Pending.Done != 0 {
		t.Fatalf("mode %q, pending %+v; want full text while 300 memories are embedded in the background", r.Mode, r.Pending)
	}
	if !strings.Contains(r.Mode, "being embedded in the background: 0 of 300 done") {
		t.Errorf("mode %q does not say the memories are being embedded", r.Mode)
	}
	if len(r.Relevant) != 1 || r.Relevant[0].Description != "my cat is named Miso" {
		t.Fatalf("relevant = %+v, want the cat memory by full text", r.Relevant)
	}
	if r := retrieveWithin(t, s, q); r.Pending == nil || !r.Pending.Background {
		t.Fatalf("second retrieval: pending %+v, want the embedding still under way", r.Pending)
	}
	g.open()
	s.background.mu.Lock()
	done := s.background.done
	s.background.mu.Unlock()
	<-done
	if n := g.mostWaiting.Load(); n != 1 {
		t.Errorf("%d batches were sent at once; one embedding runs at a time", n)
	}
	var vectors int
	s.db.QueryRow(`SELECT count(*) FROM vectors`).Scan(&vectors)
	if vectors != 300 {
		t.Fatalf("%d vectors stored, want one per memory", vectors)
	}
	r = retrieveWithin(t, s, q)
	if !strings.HasPrefix(r.Mode, ModeEmbeddings) || r.Pending != nil || r.Relevant[0].Description != "my cat is named Miso" {
		t.Fatalf("mode %q, pending %+v, relevant %+v; want the cat memory ranked by embeddings", r.Mode, r.Pending, r.Relevant)
	}
}

// Closing the store while memories are being embedded stops the
// embedding at once; a read-only store embeds none of many memories
// without a vector (they would die with it), and says how many they are.
func TestBackgroundEmbeddingStopsOnCloseAndReadOnlyStoresLeaveIt(t *testing.T) {
	dir := t.TempDir()
	index := filepath.Join(t.TempDir(), "index.db")
	manyMemories(t, dir, 300)
	g := newGatedServer(t)
	s, err := Open(dir, index, Options{Embedder: &Embedder{URL: g.URL, Model: "m", Batch: 64}})
	if err != nil {
		t.Fatal(err)
	}
	retrieveWithin(t, s, Query{Text: "my cat", TopK: 1})
	for start := time.Now(); g.waiting.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 30*time.Second {
			t.Fatal("no batch was sent to be embedded")
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close waited for the background embedding")
	}
	ro, err := Open(dir, index, Options{ReadOnly: true, Embedder: &Embedder{URL: g.URL, Model: "m", Batch: 64}})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	before := g.sent.Load()
	r := retrieveWithin(t, ro, Query{Text: "my cat", TopK: 1})
	if r.Pending == nil || r.Pending.Background || r.Pending.Total != 300 || !strings.Contains(r.Mode, "300 memories have no embedding yet") {
		t.Fatalf("read-only: mode %q, pending %+v; want full text and the 300 memories without a vector named", r.Mode, r.Pending)
	}
	if g.sent.Load() != before {
		t.Error("a read-only store sent memories to be embedded")
	}
}
