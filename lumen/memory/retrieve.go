package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/llmkernels/kernels/internal/sqldb"
)

// Retrieval modes, as Mode and Retrieval.Mode name them.
const (
	ModeFullText   = "full-text (SQLite FTS5 bm25)"
	ModeEmbeddings = "embeddings"
)

// Scoring weighs the three components of a memory's retrieval score, as
// Generative Agents does: each component is min-max normalised over the
// candidates, then score = Recency×recency + Importance×importance +
// Relevance×relevance.
type Scoring struct {
	Recency    float64 `json:"recency"`
	Importance float64 `json:"importance"`
	Relevance  float64 `json:"relevance"`
}

// DefaultScoring weighs relevance most, then importance, then recency (the
// weights of Generative Agents' reference code). Because the components are
// added, not multiplied, a memory faded by two years of decay still comes
// back when it is the one that matches.
var DefaultScoring = Scoring{Recency: 0.5, Importance: 2, Relevance: 3}

// RecencyPerHour is Generative Agents' recency decay: 0.995 per hour since
// the memory was last accessed (written or used).
const RecencyPerHour = 0.995

// Query asks for the context of one loop step.
type Query struct {
	Text   string // what the step is about: relevant memories match it
	Recent int    // how many most recent memories
	TopK   int    // how many most relevant memories
	// Authors limits the relevant memories (and, when RecentAuthors is
	// empty, the recent ones) to these authors; empty means all.
	Authors []string
	// RecentAuthors limits the recent window to these authors.
	RecentAuthors []string
	// Now is the time recency is measured from; zero means now.
	Now time.Time
	// Exclude lists memories that are not candidates for relevance: the
	// query's own memory (a person's question matches itself best) and
	// whatever else the current turn wrote. They would take the top
	// relevance and squeeze every other memory's normalised relevance
	// towards 0, leaving importance to decide. The recent window may
	// still hold them.
	Exclude []string
}

// Scored is a relevant memory with its score and the normalised
// components that make it up.
type Scored struct {
	Entry
	Score      float64 `json:"score"`
	Recency    float64 `json:"recency"`
	Importance float64 `json:"importance_score"`
	Relevance  float64 `json:"relevance"`
	// Raw is the relevance before normalising: bm25 (higher is better) or
	// cosine similarity.
	Raw float64 `json:"raw_relevance"`
}

// Retrieval is the N most recent memories united with the top-K relevant
// ones, deduplicated.
type Retrieval struct {
	Entries  []Entry  // the union, oldest first
	Recent   []string // ids of the most recent, newest first
	Relevant []Scored // the most relevant, best first
	Mode     string
	// Pending is set when an embedder is configured but relevance was
	// ranked by full text because memories are still without a vector.
	Pending *EmbeddingProgress
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

// Scoring is how retrieval weighs recency, importance and relevance.
func (s *Store) Scoring() Scoring { return s.opts.Scoring }

// candidatePool is how many candidates relevance ranking rescores.
func candidatePool(k int) int { return max(50, 5*k) }

// Retrieve returns the N most recent memories and the top-K relevant to
// q.Text, deduplicated. Candidates come from full-text search (bm25) or,
// with an Embedder, from cosine similarity; each is scored on recency,
// importance (its strength: judged worth plus use) and relevance, each
// normalised over the candidates, summed with the Scoring weights.
func (s *Store) Retrieve(ctx context.Context, q Query) (*Retrieval, error) {
	return heal(s, func() (*Retrieval, error) { return s.retrieve(ctx, q) })
}

func (s *Store) retrieve(ctx context.Context, q Query) (*Retrieval, error) {
	if err := s.Sync(ctx); err != nil {
		return nil, err
	}
	res := &Retrieval{Mode: s.Mode()}
	if q.Recent > 0 {
		authors := q.RecentAuthors
		if len(authors) == 0 {
			authors = q.Authors
		}
		recent, err := s.List(ctx, Filter{Authors: authors, Limit: q.Recent})
		if err != nil {
			return nil, err
		}
		for i := len(recent) - 1; i >= 0; i-- {
			res.Recent = append(res.Recent, recent[i].ID)
		}
		res.Entries = recent
	}
	if q.TopK > 0 && strings.TrimSpace(q.Text) != "" {
		var cands []Scored
		var err error
		if s.opts.Embedder != nil {
			cands, err = s.byEmbedding(ctx, q)
			var pending *EmbeddingProgress
			switch {
			case errors.As(err, &pending):
				res.Pending = pending
				res.Mode = ModeFullText + " (" + pending.String() + ")"
				cands, err = s.byFullText(ctx, q)
			case err != nil:
				s.opts.Logger.Warn("memory: embeddings failed; ranking by full text instead", "err", err)
				res.Mode = ModeFullText + " (embeddings failed: " + truncate(err.Error(), 200) + ")"
				cands, err = s.byFullText(ctx, q)
			}
		} else {
			cands, err = s.byFullText(ctx, q)
		}
		if err != nil {
			return nil, err
		}
		now := q.Now
		if now.IsZero() {
			now = time.Now()
		}
		res.Relevant = s.rank(cands, now, q.TopK)
		seen := make(map[string]bool, len(res.Entries))
		for _, e := range res.Entries {
			seen[e.ID] = true
		}
		for _, r := range res.Relevant {
			if !seen[r.ID] {
				seen[r.ID] = true
				res.Entries = append(res.Entries, r.Entry)
			}
		}
	}
	sort.Slice(res.Entries, func(i, j int) bool { return res.Entries[i].Seq < res.Entries[j].Seq })
	return res, nil
}

// rank scores the candidates and keeps the k best, best first.
func (s *Store) rank(cands []Scored, now time.Time, k int) []Scored {
	if len(cands) == 0 {
		return nil
	}
	w := s.opts.Scoring
	rec := make([]float64, len(cands))
	imp := make([]float64, len(cands))
	rel := make([]float64, len(cands))
	for i, c := range cands {
		hours := math.Max(0, now.Sub(c.LastAccess).Hours())
		rec[i] = math.Pow(RecencyPerHour, hours)
		imp[i] = c.Strength
		rel[i] = c.Raw
	}
	normalise(rec)
	normalise(imp)
	normalise(rel)
	for i := range cands {
		cands[i].Recency, cands[i].Importance, cands[i].Relevance = rec[i], imp[i], rel[i]
		cands[i].Score = w.Recency*rec[i] + w.Importance*imp[i] + w.Relevance*rel[i]
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].Score != cands[j].Score {
			return cands[i].Score > cands[j].Score
		}
		return cands[i].Seq > cands[j].Seq
	})
	if len(cands) > k {
		cands = cands[:k]
	}
	return cands
}

// normalise scales xs to 0..1 (min-max); all equal become 1.
func normalise(xs []float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	for i, x := range xs {
		if hi > lo {
			xs[i] = (x - lo) / (hi - lo)
		} else {
			xs[i] = 1
		}
	}
}

// words are the distinct words of text with three or more characters,
// lower-cased, in order; at most limit of them when limit > 0. Memories
// are counted by them (the terms table).
func words(text string, limit int) []string {
	var out []string
	seen := map[string]bool{}
	scanTokens(text, func(w string) bool {
		if utf8.RuneCountInString(w) >= 3 && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
		return limit <= 0 || len(out) < limit
	})
	return out
}

// scanTokens calls fn with each token of text (a run of letters and
// digits, as FTS5's unicode61 tokenizer cuts them), lower-cased, in
// order, while fn returns true.
func scanTokens(text string, fn func(string) bool) {
	start, ascii, upper := -1, true, false
	for i, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start, ascii, upper = i, true, false
			}
			if r >= utf8.RuneSelf {
				ascii = false
			} else if 'A' <= r && r <= 'Z' {
				upper = true
			}
			continue
		}
		if start >= 0 {
			if !fn(fold(text[start:i], ascii, upper)) {
				return
			}
			start = -1
		}
	}
	if start >= 0 {
		fn(fold(text[start:], ascii, upper))
	}
}

// fold lower-cases a word, cheaply when it is ASCII already lower-case.
func fold(w string, ascii, upper bool) string {
	if ascii && !upper {
		return w
	}
	return strings.ToLower(w)
}

// maxPostings bounds the work of one full-text query: the query keeps its
// rarest words while the memories they occur in add up to at most this
// many (the rarest word is always kept). Words that occur nearly everywhere
// carry almost no bm25 weight, so dropping them changes little and keeps
// retrieval fast as memory grows.
const maxPostings = 20_000

// maxPhrases bounds the phrases of one query: each is matched on its own
// (a question has a few).
const maxPhrases = 8

// stopWords are English words that say how a question is asked, not what
// it is about ("what", "when", "with", "does"). As query words of their
// own they rank the memories that happen to share them ("when I was a
// kid") above the one that answers, which seldom contains them; they
// still join the words around them into phrases. Words shorter than
// three letters are never query words.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`the and but for nor not yet are was were been being have has had does did doing
		can could would should will shall may might must what when where which who whom whose why how that this these those
		there here then than with from into onto about over under after before again any all some such only own same too very
		just also you your yours they them their theirs she her hers him his its our ours mine myself yourself itself
		ourselves themselves one tell told know say said please`) {
		stopWords[w] = true
	}
}

// ftsQuery builds the FTS5 query for text: its rarest words, quoted and
// joined by OR, and the phrases its words make. A word and the next one,
// next to each other or with one short or stop word between them ("first
// car", "sister's name", "friend from school"), are a phrase: a person
// asking about something in their own words uses the words they told it
// in, side by side as they said them, and bm25 weighs a phrase by how rare
// it is, as it weighs a word. Words and phrases each have maxPostings to
// spend; a phrase costs what the rarer of its two words does (it matches
// no more memories than that), so a phrase of two common words still
// counts when the words alone are too common to be query words.
func (s *Store) ftsQuery(ctx context.Context, text string) (string, error) {
	var toks []string
	scanTokens(text, func(t string) bool {
		toks = append(toks, t)
		return len(toks) < 64
	})
	content := func(t string) bool { return utf8.RuneCountInString(t) >= 3 && !stopWords[t] }
	var cands []string
	docs := map[string]int{}
	for _, t := range toks {
		if content(t) && len(cands) < 16 {
			if _, ok := docs[t]; !ok {
				docs[t] = 0
				cands = append(cands, t)
			}
		}
	}
	if len(cands) == 0 { // nothing but stop words ("who are you?"): they are all there is
		cands = words(text, 16)
	}
	for _, w := range cands {
		var n int
		err := s.db.QueryRowContext(ctx, `SELECT docs FROM terms WHERE term = ?`, w).Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
			// In no memory as written; the tokenizer may still fold it
			// (diacritics) into a word that is: keep it, it costs nothing.
			err = nil
		}
		if err != nil {
			return "", fmt.Errorf("memory index: %w", err)
		}
		docs[w] = n
	}
	sort.SliceStable(cands, func(i, j int) bool { return docs[cands[i]] < docs[cands[j]] })
	var terms []string
	total := 0
	for i, w := range cands {
		if i > 0 && total+docs[w] > maxPostings {
			break
		}
		total += docs[w]
		terms = append(terms, `"`+w+`"`)
	}
	seen := map[string]bool{}
	total = 0
	counted := func(t string) bool {
		_, ok := docs[t]
		return ok && content(t)
	}
	for i, t := range toks {
		if !counted(t) {
			continue
		}
		for j := i + 1; j < len(toks) && j <= i+2; j++ {
			if !content(toks[j]) {
				continue
			}
			if !counted(toks[j]) {
				break
			}
			p := `"` + strings.Join(toks[i:j+1], " ") + `"`
			if cost := min(docs[t], docs[toks[j]]); !seen[p] && len(seen) < maxPhrases && total+cost <= maxPostings {
				seen[p] = true
				total += cost
				terms = append(terms, p)
			}
			break
		}
	}
	return strings.Join(terms, " OR "), nil
}

// candidateClause is the condition q puts on relevance candidates (their
// authors, the memories it excludes) for a query on memories m that
// already has a WHERE.
func candidateClause(q Query) (string, []any, error) {
	where, args, err := Filter{Authors: q.Authors}.where()
	and := strings.Replace(where, " WHERE ", " AND ", 1)
	if len(q.Exclude) > 0 {
		and += " AND m.id NOT IN (?" + strings.Repeat(",?", len(q.Exclude)-1) + ")"
		for _, id := range q.Exclude {
			args = append(args, id)
		}
	}
	return and, args, err
}

// byFullText takes the candidatePool best memories by bm25.
func (s *Store) byFullText(ctx context.Context, q Query) ([]Scored, error) {
	match, err := s.ftsQuery(ctx, q.Text)
	if err != nil || match == "" {
		return nil, err
	}
	and, args, err := candidateClause(q)
	if err != nil {
		return nil, err
	}
	return sqldb.List(ctx, s.db.QueryContext, fmt.Sprintf("memory index: full-text query %q", match), func(r *sql.Rows) (Scored, error) {
		var c Scored
		var err error
		c.Entry, err = s.scanEntry(r, &c.Raw)
		return c, err
	}, `SELECT m.seq, m.id, m.day, m.offset, m.line, m.importance, m.strength, m.weight, m.touched, m.mset,
		-bm25(memories_fts) FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid
		WHERE memories_fts MATCH ?`+and+` ORDER BY bm25(memories_fts) LIMIT ?`,
		append(append([]any{match}, args...), candidatePool(q.TopK))...)
}

// byEmbedding takes the candidatePool memories most similar to q.Text by
// cosine. Memories without a vector for the model are embedded first when
// they are a few (those written since the last retrieval); when they are
// more (an endpoint configured on an instance that has lived without one),
// it returns *EmbeddingProgress: they are embedded in the background
// meanwhile (startEmbedding), and the caller ranks by full text.
func (s *Store) byEmbedding(ctx context.Context, q Query) ([]Scored, error) {
	e := s.opts.Embedder
	qv, err := e.Embed(ctx, []string{q.Text})
	if err != nil {
		return nil, err
	}
	if p := s.embeddingProgress(); p != nil {
		return nil, p
	}
	if err := s.dropOtherSizes(ctx, e.Model, len(qv[0])); err != nil {
		return nil, err
	}
	n, err := s.missingVectors(ctx, e.Model, inlineEmbed+1)
	if err != nil {
		return nil, err
	}
	if n > inlineEmbed {
		return nil, s.startEmbedding(ctx, e, len(qv[0]))
	}
	if err := s.embedMissing(ctx, e, len(qv[0])); err != nil {
		return nil, err
	}
	and, args, err := candidateClause(q)
	if err != nil {
		return nil, err
	}
	type hit struct {
		seq int64
		sim float64
	}
	hits, err := sqldb.List(ctx, s.db.QueryContext, "memory index", func(r *sql.Rows) (hit, error) {
		var h hit
		var vec []byte
		if err := r.Scan(&h.seq, &vec); err != nil {
			return h, err
		}
		h.sim = dot(qv[0], vec)
		return h, nil
	}, `SELECT m.seq, v.vec FROM memories m JOIN vectors v ON v.hash = m.text_hash AND v.model = ?
		WHERE 1`+and, append([]any{e.Model}, args...)...)
	if err != nil {
		return nil, err
	}
	sort.Slice(hits, func(i, j int) bool { return hits[i].sim > hits[j].sim })
	if n := candidatePool(q.TopK); len(hits) > n {
		hits = hits[:n]
	}
	out := make([]Scored, 0, len(hits))
	for _, h := range hits {
		es, err := s.query(ctx, `SELECT `+entryColumns+` FROM memories WHERE seq = ?`, h.seq)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			out = append(out, Scored{Entry: e, Raw: h.sim})
		}
	}
	return out, nil
}

// dropOtherSizes deletes the model's vectors that do not have dim
// dimensions; it looks once per process and size.
func (s *Store) dropOtherSizes(ctx context.Context, model string, dim int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dims[model] == dim {
		return nil
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM vectors WHERE model = ? AND length(vec) != ?`, model, 4*dim).Scan(&n); err != nil {
		return fmt.Errorf("memory index: %w", err)
	}
	if n > 0 {
		if err := s.writableLocked(ctx); err != nil {
			return err
		}
		if _, err := s.db.ExecContext(ctx, `DELETE FROM vectors WHERE model = ? AND length(vec) != ?`, model, 4*dim); err != nil {
			return fmt.Errorf("memory index: %w", err)
		}
		s.opts.Logger.Warn("memory: the embedding endpoint now answers vectors of another size; the stored ones are made again", "model", model, "dimensions", dim, "dropped", n)
	}
	s.dims[model] = dim
	return nil
}

// writableLocked makes a read-only index one this process can write: a
// copy in memory (nothing is written beside the files). Called under s.mu.
func (s *Store) writableLocked(ctx context.Context) error {
	if !s.readOnly {
		return nil
	}
	err := s.copyToMemory(ctx)
	if err != nil {
		s.opts.Logger.Warn("memory index: it cannot be copied into memory: building it there from the files", "path", s.indexPath, "err", err)
		if err = s.useMemory(ctx); err == nil {
			err = s.sync(ctx, true)
		}
	}
	return err
}

// embedMissing embeds, in batches, the texts that have no vector of dim
// dimensions for the embedder's model yet (a few: see byEmbedding).
// Vectors are keyed by the text's hash, so they survive rebuilds; on a
// read-only index they live in a copy in memory, as long as the process.
func (s *Store) embedMissing(ctx context.Context, e *Embedder, dim int) error {
	s.mu.Lock()
	err := s.writableLocked(ctx)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	for {
		n, err := s.embedBatch(ctx, e, dim)
		if err != nil || n == 0 {
			return err
		}
	}
}

// embedBatch embeds up to embedBatchSize texts that have no vector for
// e's model and stores their vectors; it returns how many (0: none was
// missing). The index is read and written under s.mu, the endpoint called
// outside it.
func (s *Store) embedBatch(ctx context.Context, e *Embedder, dim int) (int, error) {
	hashes, texts, err := s.withDB(func(db *sql.DB) ([][]byte, []string, error) {
		return missingTexts(ctx, db, e.Model, embedBatchSize)
	})
	if err != nil || len(hashes) == 0 {
		return 0, err
	}
	vecs, err := e.Embed(ctx, texts)
	if err != nil {
		return 0, err
	}
	if len(vecs[0]) != dim {
		return 0, fmt.Errorf("embeddings: %s answered vectors of %d dimensions for memories and %d for the query: they cannot be compared", e.URL, len(vecs[0]), dim)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		for i, v := range vecs {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO vectors (hash, model, vec) VALUES (?, ?, ?)`, hashes[i], e.Model, encodeVector(v)); err != nil {
				return fmt.Errorf("memory index: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(vecs), nil
}

// withDB runs fn on the index under s.mu (a rebuild may replace it).
func (s *Store) withDB(fn func(*sql.DB) ([][]byte, []string, error)) ([][]byte, []string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fn(s.db.DB)
}

// missingTexts are up to limit texts (situation and description) of
// memories without a vector for model, with their hashes.
func missingTexts(ctx context.Context, db *sql.DB, model string, limit int) ([][]byte, []string, error) {
	type missing struct {
		hash []byte
		text string
	}
	found, err := sqldb.List(ctx, db.QueryContext, "memory index", func(r *sql.Rows) (missing, error) {
		var h missing
		var line string
		var m Memory
		err := r.Scan(&h.hash, &line)
		if err == nil {
			err = json.Unmarshal([]byte(line), &m)
		}
		h.text = strings.TrimSpace(m.Situation + "\n" + m.Description)
		return h, err
	}, `SELECT text_hash, min(line) FROM memories m
		WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.hash = m.text_hash AND v.model = ?) GROUP BY text_hash LIMIT ?`, model, limit)
	if err != nil {
		return nil, nil, err
	}
	var hashes [][]byte
	var texts []string
	for _, h := range found {
		hashes = append(hashes, h.hash)
		texts = append(texts, h.text)
	}
	return hashes, texts, nil
}
