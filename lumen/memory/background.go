package memory

import (
	"context"
	"fmt"
	"sync"
)

// inlineEmbed is how many memories without a vector a retrieval embeds
// itself before it ranks by embeddings: those written since the last one.
// More (an endpoint configured on an instance that lived without one: at
// 100,000 memories, over ten minutes of requests) are embedded in the
// background, and retrieval ranks by full text until they are done.
const inlineEmbed = 256

// embedBatchSize is how many texts one batch takes from the index; the
// Embedder splits them into requests of its own Batch size.
const embedBatchSize = 512

// EmbeddingProgress says that retrieval ranked by full text because
// memories have no vector for the embedding model yet. As an error it is
// what byEmbedding returns to say so.
type EmbeddingProgress struct {
	Model string `json:"model"`
	// Done of Total texts that had no vector when the embedding began have
	// one now (Total grows when memories written meanwhile are embedded
	// too).
	Done  int `json:"done"`
	Total int `json:"total"`
	// Background is true when this process is embedding them; false for
	// an instance opened read-only, which leaves them to a command that
	// writes.
	Background bool `json:"background"`
}

func (p *EmbeddingProgress) Error() string { return p.String() }

func (p *EmbeddingProgress) String() string {
	if p.Background {
		return fmt.Sprintf("memories are being embedded in the background: %d of %d done", p.Done, p.Total)
	}
	return fmt.Sprintf("%d memories have no embedding yet: a command that writes (chat, run) makes them", p.Total)
}

// embedding is the background embedding of a Store.
type embedding struct {
	mu       sync.Mutex
	running  bool
	progress EmbeddingProgress
	cancel   context.CancelFunc
	done     chan struct{} // closed when the goroutine ends
}

// embeddingProgress is the background embedding's progress while it runs;
// nil when none runs.
func (s *Store) embeddingProgress() *EmbeddingProgress {
	b := &s.background
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.running {
		return nil
	}
	p := b.progress
	return &p
}

// missingVectors counts the memories without a vector for model, up to
// limit (the count stops there).
func (s *Store) missingVectors(ctx context.Context, model string, limit int) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM memories m
		WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.hash = m.text_hash AND v.model = ?) LIMIT ?)`, model, limit).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("memory index: %w", err)
	}
	return n, nil
}

// missingTextCount counts the distinct texts without a vector for model.
func (s *Store) missingTextCount(ctx context.Context, model string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(DISTINCT text_hash) FROM memories m
		WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.hash = m.text_hash AND v.model = ?)`, model).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("memory index: %w", err)
	}
	return n, nil
}

// startEmbedding starts embedding, in the background, the memories that
// have no vector of dim dimensions for e's model (unless it runs already)
// and returns its progress. A store opened read-only starts nothing: its
// vectors would die with the process.
func (s *Store) startEmbedding(ctx context.Context, e *Embedder, dim int) *EmbeddingProgress {
	b := &s.background
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running {
		p := b.progress
		return &p
	}
	total, err := s.missingTextCount(ctx, e.Model)
	if err != nil {
		total = inlineEmbed + 1 // more than a retrieval embeds; the count is only shown
	}
	if s.opts.ReadOnly {
		return &EmbeddingProgress{Model: e.Model, Total: total}
	}
	bg, cancel := context.WithCancel(context.Background())
	b.running, b.cancel, b.done = true, cancel, make(chan struct{})
	b.progress = EmbeddingProgress{Model: e.Model, Total: total, Background: true}
	s.opts.Logger.Debug("memory: embedding memories in the background; relevance is ranked by full text until they are done", "model", e.Model, "texts", total)
	go s.embedInBackground(bg, e, dim, b.done)
	p := b.progress
	return &p
}

// embedInBackground embeds batch after batch until no memory is without a
// vector, the endpoint fails (a later retrieval starts it again, after the
// Embedder's cool-down) or the store closes. Each batch is stored as it
// comes, so what was embedded is kept whatever stops it.
func (s *Store) embedInBackground(ctx context.Context, e *Embedder, dim int, done chan struct{}) {
	defer close(done)
	b := &s.background
	var err error
	for {
		var n int
		if n, err = s.embedBatch(ctx, e, dim); err != nil || n == 0 {
			break
		}
		b.mu.Lock()
		b.progress.Done += n
		b.progress.Total = max(b.progress.Total, b.progress.Done)
		b.mu.Unlock()
	}
	b.mu.Lock()
	b.running = false
	p := b.progress
	b.mu.Unlock()
	switch {
	case ctx.Err() != nil: // the store is closing
	case err != nil:
		s.opts.Logger.Warn("memory: embedding in the background stopped; relevance is ranked by full text until a later retrieval starts it again",
			"done", p.Done, "of", p.Total, "err", err)
	default:
		s.opts.Logger.Info("memory: every memory has an embedding now; relevance is ranked by embeddings", "model", e.Model, "embedded", p.Done)
	}
}

// stopEmbedding cancels the background embedding, if any, and waits for
// it to end.
func (s *Store) stopEmbedding() {
	b := &s.background
	b.mu.Lock()
	cancel, done := b.cancel, b.done
	b.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}
