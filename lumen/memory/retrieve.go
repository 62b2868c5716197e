package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// Retrieval modes, as Mode and Retrieval.Mode name them.
const (
	ModeFullText   = "full-text (SQLite FTS5 bm25)"
	ModeEmbeddings = "embeddings"
)

// Query asks for the context of one loop step.
type Query struct {
	Text    string   // what the step is about: relevant memories match it
	Recent  int      // how many most recent memories
	TopK    int      // how many most relevant memories
	Authors []string // only these authors; empty means all
}

// Retrieval is the N most recent memories united with the top-K relevant
// ones, deduplicated.
type Retrieval struct {
	Entries  []Entry  // the union, oldest first
	Recent   []string // ids of the most recent, newest first
	Relevant []string // ids of the most relevant, best first
	Mode     string
}

// IDs lists the ids of the entries, to record as Memory.Used.
func (r *Retrieval) IDs() []string {
	ids := make([]string, len(r.Entries))
	for i, e := range r.Entries {
		ids[i] = e.ID
	}
	return ids
}

// Mode says how relevance is ranked.
func (s *Store) Mode() string {
	if s.opts.Embedder != nil {
		return ModeEmbeddings + " (" + s.opts.Embedder.String() + ")"
	}
	return ModeFullText
}

// Retrieve returns the N most recent memories and the top-K relevant to
// q.Text, deduplicated. Relevance is embedding similarity when an Embedder
// is set, else FTS5 bm25; either is multiplied by the memory's current
// weight, so strong memories surface and faded ones sink.
func (s *Store) Retrieve(ctx context.Context, q Query) (*Retrieval, error) {
	res := &Retrieval{Mode: s.Mode()}
	if q.Recent > 0 {
		recent, err := s.List(ctx, Filter{Authors: q.Authors, Limit: q.Recent})
		if err != nil {
			return nil, err
		}
		for i := len(recent) - 1; i >= 0; i-- {
			res.Recent = append(res.Recent, recent[i].ID)
		}
		res.Entries = recent
	} else if err := s.Sync(ctx); err != nil {
		return nil, err
	}
	if q.TopK > 0 && strings.TrimSpace(q.Text) != "" {
		var relevant []scored
		var err error
		if s.opts.Embedder != nil {
			relevant, err = s.byEmbedding(ctx, q)
		} else {
			relevant, err = s.byFullText(ctx, q)
		}
		if err != nil {
			return nil, err
		}
		seen := make(map[string]bool, len(res.Entries))
		for _, e := range res.Entries {
			seen[e.ID] = true
		}
		for _, r := range relevant {
			res.Relevant = append(res.Relevant, r.ID)
			if !seen[r.ID] {
				seen[r.ID] = true
				res.Entries = append(res.Entries, r.Entry)
			}
		}
	}
	sort.Slice(res.Entries, func(i, j int) bool { return res.Entries[i].Seq < res.Entries[j].Seq })
	return res, nil
}

type scored struct {
	Entry
	score float64
}

// topK keeps the k best by score, best first.
func topK(all []scored, k int) []scored {
	sort.SliceStable(all, func(i, j int) bool { return all[i].score > all[j].score })
	if len(all) > k {
		all = all[:k]
	}
	return all
}

// words are the distinct words of text with three or more characters,
// lower-cased, in order; at most limit of them when limit > 0. Memories
// are counted by them (the terms table) and queries are built from them.
func words(text string, limit int) []string {
	fields := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	seen := map[string]bool{}
	var out []string
	for _, w := range fields {
		if len([]rune(w)) < 3 || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
		if len(out) == limit {
			break
		}
	}
	return out
}

// maxPostings bounds the work of one full-text query: the query keeps its
// rarest words while the memories they occur in add up to at most this
// many (the rarest word is always kept). Words that occur nearly everywhere
// carry almost no bm25 weight, so dropping them changes little and keeps
// retrieval fast as memory grows.
const maxPostings = 20_000

// ftsQuery builds the FTS5 query for text from its rarest words, quoted
// and joined by OR; "" when no word occurs in any memory.
func (s *Store) ftsQuery(ctx context.Context, text string) (string, error) {
	ws := words(text, 16)
	type term struct {
		word string
		docs int
	}
	var terms []term
	for _, w := range ws {
		var docs int
		err := s.db.QueryRowContext(ctx, `SELECT docs FROM terms WHERE term = ?`, w).Scan(&docs)
		if errors.Is(err, sql.ErrNoRows) {
			continue // in no memory
		}
		if err != nil {
			return "", fmt.Errorf("memory index: %w", err)
		}
		terms = append(terms, term{w, docs})
	}
	sort.Slice(terms, func(i, j int) bool { return terms[i].docs < terms[j].docs })
	var kept []string
	total := 0
	for i, t := range terms {
		if i > 0 && total+t.docs > maxPostings {
			break
		}
		total += t.docs
		kept = append(kept, `"`+t.word+`"`)
	}
	return strings.Join(kept, " OR "), nil
}

// byFullText ranks by bm25 over situation and description, takes the best
// candidates and reorders them by bm25 × current weight.
func (s *Store) byFullText(ctx context.Context, q Query) ([]scored, error) {
	match, err := s.ftsQuery(ctx, q.Text)
	if err != nil || match == "" {
		return nil, err
	}
	where, args, err := Filter{Authors: q.Authors}.where()
	if err != nil {
		return nil, err
	}
	where = strings.Replace(where, " WHERE ", " AND ", 1)
	rows, err := s.db.QueryContext(ctx, `SELECT m.seq, m.id, m.line, m.weight, -bm25(memories_fts) AS r
		FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid
		WHERE memories_fts MATCH ?`+where+` ORDER BY bm25(memories_fts) LIMIT ?`,
		append(append([]any{match}, args...), q.TopK*5)...)
	if err != nil {
		return nil, fmt.Errorf("memory index: full-text query %q: %w", match, err)
	}
	defer rows.Close()
	var all []scored
	for rows.Next() {
		var seq int64
		var id, text string
		var w, r float64
		if err := rows.Scan(&seq, &id, &text, &w, &r); err != nil {
			return nil, fmt.Errorf("memory index: %w", err)
		}
		e, err := decodeEntry(seq, id, text, w)
		if err != nil {
			return nil, err
		}
		all = append(all, scored{Entry: e, score: r * w})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memory index: %w", err)
	}
	return topK(all, q.TopK), nil
}

// byEmbedding embeds whatever memories have no vector yet for the model,
// then ranks every memory by cosine similarity × current weight.
func (s *Store) byEmbedding(ctx context.Context, q Query) ([]scored, error) {
	e := s.opts.Embedder
	if err := s.embedMissing(ctx, e); err != nil {
		return nil, err
	}
	qv, err := e.Embed(ctx, []string{q.Text})
	if err != nil {
		return nil, err
	}
	where, args, err := Filter{Authors: q.Authors}.where()
	if err != nil {
		return nil, err
	}
	where = strings.Replace(where, " WHERE ", " AND ", 1)
	rows, err := s.db.QueryContext(ctx, `SELECT m.seq, m.id, m.weight, v.vec FROM vectors v JOIN memories m ON m.seq = v.seq
		WHERE v.model = ?`+where, append([]any{e.Model}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("memory index: %w", err)
	}
	type hit struct {
		seq   int64
		score float64
	}
	var hits []hit
	for rows.Next() {
		var seq int64
		var id string
		var w float64
		var vec []byte
		if err := rows.Scan(&seq, &id, &w, &vec); err != nil {
			rows.Close()
			return nil, fmt.Errorf("memory index: %w", err)
		}
		hits = append(hits, hit{seq, dot(qv[0], vec) * w})
	}
	rows.Close()
	sort.Slice(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	if len(hits) > q.TopK {
		hits = hits[:q.TopK]
	}
	out := make([]scored, 0, len(hits))
	for _, h := range hits {
		es, err := s.query(ctx, `SELECT seq, id, line, weight FROM memories WHERE seq = ?`, h.seq)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			out = append(out, scored{Entry: e, score: h.score})
		}
	}
	return out, nil
}

func (s *Store) embedMissing(ctx context.Context, e *Embedder) error {
	for {
		rows, err := s.db.QueryContext(ctx, `SELECT m.seq, m.situation, m.description FROM memories m
			WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.seq = m.seq AND v.model = ?) ORDER BY m.seq LIMIT 512`, e.Model)
		if err != nil {
			return fmt.Errorf("memory index: %w", err)
		}
		var seqs []int64
		var texts []string
		for rows.Next() {
			var seq int64
			var sit, desc string
			if err := rows.Scan(&seq, &sit, &desc); err != nil {
				rows.Close()
				return fmt.Errorf("memory index: %w", err)
			}
			seqs = append(seqs, seq)
			texts = append(texts, strings.TrimSpace(sit+"\n"+desc))
		}
		rows.Close()
		if len(seqs) == 0 {
			return nil
		}
		vecs, err := e.Embed(ctx, texts)
		if err != nil {
			return err
		}
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("memory index: %w", err)
		}
		for i, v := range vecs {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO vectors (seq, model, vec) VALUES (?, ?, ?)`, seqs[i], e.Model, encodeVector(v)); err != nil {
				tx.Rollback()
				return fmt.Errorf("memory index: %w", err)
			}
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("memory index: %w", err)
		}
	}
}
