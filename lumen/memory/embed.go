package memory

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/llmkernels/kernels/internal/clip"
)

// Embedder calls an OpenAI-compatible embeddings endpoint:
// POST {URL}/embeddings with {"model", "input": [texts]}, answered by
// {"data": [{"index", "embedding"}]}. OpenAI, Ollama, vLLM, LM Studio and
// llama.cpp servers speak it.
type Embedder struct {
	URL   string // base URL, e.g. https://api.openai.com/v1
	Model string // e.g. text-embedding-3-small
	Key   string // sent as a bearer token when set
	// Batch is how many texts go in one request; default 64.
	Batch  int
	Client *http.Client // default http.DefaultClient
	// Timeout bounds each request; default 30s. The steps that retrieve
	// memories run to completion once started (Ctrl-C lets them finish),
	// so an endpoint that never answers must not hold them.
	Timeout time.Duration
	// Cooldown is how long after a failure Embed fails at once, without
	// calling the endpoint; default 5m. A dead endpoint then costs one
	// timeout, not one per step, and retrieval uses full text meanwhile.
	Cooldown time.Duration

	mu      sync.Mutex
	failed  time.Time // when the endpoint last failed
	failure error
}

func (e *Embedder) String() string { return e.Model + " at " + e.URL }

// Embed returns one unit-length vector per text, in order, all of one
// size. Within the cool-down after a failure it returns that failure.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := e.coolingDown(); err != nil {
		return nil, err
	}
	vecs, err := e.embed(ctx, texts)
	if err != nil {
		e.mu.Lock()
		e.failed, e.failure = time.Now(), err
		e.mu.Unlock()
	}
	return vecs, err
}

func (e *Embedder) coolingDown() error {
	cool := e.Cooldown
	if cool <= 0 {
		cool = 5 * time.Minute
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failure == nil {
		return nil
	}
	if since := time.Since(e.failed); since < cool {
		return fmt.Errorf("%w (%s ago; not tried again for %s)", e.failure, since.Round(time.Second), (cool - since).Round(time.Second))
	}
	e.failure = nil
	return nil
}

func (e *Embedder) embed(ctx context.Context, texts []string) ([][]float32, error) {
	batch := e.Batch
	if batch <= 0 {
		batch = 64
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += batch {
		end := min(start+batch, len(texts))
		vecs, err := e.embedBatch(ctx, texts[start:end])
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	for _, v := range out {
		if len(v) != len(out[0]) {
			return nil, fmt.Errorf("embeddings: %s answered vectors of %d and %d dimensions in one answer: they cannot be compared", e.URL, len(out[0]), len(v))
		}
	}
	return out, nil
}

func (e *Embedder) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(map[string]any{"model": e.Model, "input": texts})
	if err != nil {
		return nil, err
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := strings.TrimRight(e.URL, "/") + "/embeddings"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.Key != "" {
		req.Header.Set("Authorization", "Bearer "+e.Key)
	}
	client := e.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("embeddings: %s: %w (check the endpoint's URL)", url, err)
	}
	defer func() { _ = resp.Body.Close() }() // what was read is the answer
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("embeddings: %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("embeddings: %s answered HTTP %d for model %q: %s (check the endpoint's URL, the model and the key)",
			url, resp.StatusCode, e.Model, clip.Text(string(data), 300))
	}
	var parsed struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &parsed); err != nil {
		return nil, fmt.Errorf("embeddings: %s: answer is not the OpenAI embeddings shape: %w: %s", url, err, clip.Text(string(data), 300))
	}
	out := make([][]float32, len(texts))
	for _, d := range parsed.Data {
		if d.Index < 0 || d.Index >= len(texts) || len(d.Embedding) == 0 {
			return nil, fmt.Errorf("embeddings: %s: answer has an entry with index %d and %d dimensions for %d inputs", url, d.Index, len(d.Embedding), len(texts))
		}
		out[d.Index] = unit(d.Embedding)
	}
	for i, v := range out {
		if v == nil {
			return nil, fmt.Errorf("embeddings: %s: answer has no vector for input %d of %d", url, i, len(texts))
		}
	}
	return out, nil
}

// unit scales v to length 1, so a dot product is the cosine similarity.
func unit(v []float64) []float32 {
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	norm = math.Sqrt(norm)
	if norm == 0 {
		norm = 1
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out
}

func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func dot(a []float32, b []byte) float64 {
	n := min(len(a), len(b)/4)
	var s float64
	for i := 0; i < n; i++ {
		s += float64(a[i]) * float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return s
}
