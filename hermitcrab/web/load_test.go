package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/script"
	"github.com/llmkernels/kernels/pscale"
)

// testServer starts a server on loopback with a scripted LLM.
func testServer(t testing.TB, scriptJSON string) (*Server, *httptest.Server) {
	t.Helper()
	srv, ts, _ := scriptServer(t, scriptJSON)
	return srv, ts
}

// scriptServer is testServer with its scripted provider, which keeps the
// requests it was sent.
func scriptServer(t testing.TB, scriptJSON string) (*Server, *httptest.Server, *script.Provider) {
	t.Helper()
	s, err := script.Parse([]byte(scriptJSON))
	if err != nil {
		t.Fatal(err)
	}
	p := script.New(s)
	srv, err := New(context.Background(), Config{
		DataDir: t.TempDir(), Provider: "script",
		NewClient: func(string) (*llm.Client, error) { return &llm.Client{Provider: p}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); srv.Close() })
	return srv, ts, p
}

// post sends a JSON POST as the page does (Origin and CSRF token).
func post(t testing.TB, ts *httptest.Server, srv *Server, path string, body any, out any) int {
	t.Helper()
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, ts.URL+path, bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", ts.URL)
	req.Header.Set("X-CSRF-Token", srv.csrf)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	defer resp.Body.Close()
	if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	} else {
		io.Copy(io.Discard, resp.Body)
	}
	return resp.StatusCode
}

func get(t testing.TB, ts *httptest.Server, path string, out any) int {
	t.Helper()
	resp, err := ts.Client().Get(ts.URL + path)
	if err != nil {
		t.Error(err)
		return 0
	}
	defer resp.Body.Close()
	if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

// entryPath gives call i (below 729) its own node: 0.a.b.c with a, b, c in 1–9.
func entryPath(i int) string { return fmt.Sprintf("0.%d.%d.%d", i/81%9+1, i/9%9+1, i%9+1) }

// hammer runs n concurrent blockWrites to distinct paths of one block and n
// concurrent blockReads of it, and returns the versions the writes got and
// every call's latency.
func hammer(t testing.TB, srv *Server, ts *httptest.Server, n int) (versions []int64, latencies []time.Duration) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	record := func(d time.Duration, v int64) {
		mu.Lock()
		latencies = append(latencies, d)
		if v > 0 {
			versions = append(versions, v)
		}
		mu.Unlock()
	}
	for i := 0; i < n; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			start := time.Now()
			var out struct{ Version int64 }
			if code := post(t, ts, srv, "/api/blocks/stash", map[string]string{"path": entryPath(i), "content": fmt.Sprintf("entry %d", i)}, &out); code != 200 {
				t.Errorf("write %d: HTTP %d", i, code)
			}
			record(time.Since(start), out.Version)
		}()
		go func() {
			defer wg.Done()
			start := time.Now()
			if code := get(t, ts, "/api/blocks/stash?path=0", nil); code != 200 {
				t.Errorf("read %d: HTTP %d", i, code)
			}
			record(time.Since(start), 0)
		}()
	}
	wg.Wait()
	return versions, latencies
}

func TestConcurrentBlockWritesThroughTheAPILoseNothing(t *testing.T) {
	const n = 200
	srv, ts := testServer(t, `{"responses":[]}`)
	var before struct{ Version int64 }
	get(t, ts, "/api/blocks/stash", &before)
	versions, _ := hammer(t, srv, ts, n)
	slices.Sort(versions)
	for i, v := range versions {
		if v != before.Version+int64(i)+1 {
			t.Fatalf("write versions are not %d..%d without gaps or repeats: %v", before.Version+1, before.Version+n, versions)
		}
	}
	for i := 0; i < n; i++ {
		var out struct{ Node struct{ Content string } }
		get(t, ts, "/api/blocks/stash?path="+entryPath(i), &out)
		if out.Node.Content != fmt.Sprintf("entry %d", i) {
			t.Fatalf("write %d lost: %q at %s", i, out.Node.Content, entryPath(i))
		}
	}
}

// BenchmarkBlockReadWriteUnderLoad measures props.blockRead/blockWrite over
// HTTP on loopback with 200 concurrent writes and 200 concurrent reads of
// one block, and reports the latency percentiles of those 400 calls.
func BenchmarkBlockReadWriteUnderLoad(b *testing.B) {
	srv, ts := testServer(b, `{"responses":[]}`)
	var all []time.Duration
	for b.Loop() {
		_, lat := hammer(b, srv, ts, 200)
		all = append(all, lat...)
		// Start each round from a fresh stash so every round does the same work.
		srv.kernel.Blocks().Edit(context.Background(), "stash", func(bl *pscale.Block) error {
			bl.Tree = &pscale.Node{}
			bl.Tree.Children[0] = &pscale.Node{Leaf: true, Text: "notes"}
			return nil
		})
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), "p50_ms")
	b.ReportMetric(pct(0.99), "p99_ms")
}
