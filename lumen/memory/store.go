package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/internal/sqlite"
)

// schema is the index: application_id "LUMN". It is derived from the day
// files, so a new layout is a step that drops the old tables and creates
// the new ones; the next Sync refills them. Indexes from before the marker
// kept their layout's number in meta ('schema'): layout 3 is step 1's.
var schema = &sqlite.Schema{
	Name: "lumen memory index",
	ID:   sqlite.LumenID,
	Steps: []string{`
DROP TABLE IF EXISTS meta;
DROP TABLE IF EXISTS files;
DROP TABLE IF EXISTS memories;
DROP TABLE IF EXISTS memories_fts;
DROP TABLE IF EXISTS terms;
DROP TABLE IF EXISTS vectors;
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (day TEXT PRIMARY KEY, size INTEGER NOT NULL);
CREATE TABLE memories (
	seq INTEGER PRIMARY KEY,
	id TEXT NOT NULL UNIQUE,
	day TEXT NOT NULL,
	ts TEXT NOT NULL,
	unix REAL NOT NULL,
	author TEXT NOT NULL,
	step TEXT NOT NULL,
	written REAL NOT NULL,
	weight REAL NOT NULL,
	touched REAL NOT NULL,
	situation TEXT NOT NULL,
	description TEXT NOT NULL,
	line TEXT NOT NULL
);
CREATE INDEX memories_author ON memories (author, seq);
CREATE INDEX memories_step ON memories (step, seq);
CREATE INDEX memories_day ON memories (day, seq);
CREATE VIRTUAL TABLE memories_fts USING fts5 (
	situation, description, content='memories', content_rowid='seq', tokenize='unicode61 remove_diacritics 2'
);
CREATE TABLE terms (term TEXT PRIMARY KEY, docs INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE vectors (seq INTEGER NOT NULL, model TEXT NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (seq, model));
`},
	Legacy: func(ctx context.Context, q sqlite.Querier) (int, bool, error) {
		tables, err := sqlite.Tables(ctx, q)
		if err != nil || !tables["meta"] || !tables["memories"] {
			return 0, false, err
		}
		var layout string
		err = q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'schema'`).Scan(&layout)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return 0, true, nil
		case err != nil:
			return 0, false, err
		case layout == "3":
			return 1, true, nil
		}
		return 0, true, nil // an older layout: step 1 replaces it
	},
}

// Tuning of weights; zero fields take the defaults.
type Options struct {
	// Strengthen is added to a memory's weight each time it is used (capped
	// at 1); default 0.05.
	Strengthen float64
	// Floor is the lowest weight decay leaves; default 0.01.
	Floor float64
	// Embedder, when set, ranks relevance by embeddings instead of full text.
	Embedder *Embedder
	Logger   *slog.Logger
	// ReadOnly opens the index read-only: nothing under its directory is
	// created or written. An index that is missing, unreadable or behind
	// the day files is built in memory instead, for this process only.
	ReadOnly bool
}

// Store is the memory of one instance: the day files under Dir and the
// index beside them.
type Store struct {
	dir  string
	db   *sql.DB
	opts Options
	mu   sync.Mutex // one Sync at a time in this process
	// readOnly: db is the index file opened read-only; a Sync that would
	// write moves to an index in memory.
	readOnly bool
}

// Open opens the memory under dir (data/memory) with its index at
// indexPath, creating the index if needed and rebuilding it when its schema
// is outdated (unless Options.ReadOnly). The index is not synced until the
// first read.
func Open(dir, indexPath string, opts Options) (*Store, error) {
	if opts.Strengthen == 0 {
		opts.Strengthen = 0.05
	}
	if opts.Floor == 0 {
		opts.Floor = 0.01
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("memory directory %s is missing: is this a lumen instance? (lumen init creates it)", dir)
	}
	ctx := context.Background()
	s := &Store{dir: dir, opts: opts, readOnly: opts.ReadOnly}
	var err error
	if opts.ReadOnly {
		s.db, err = sqlite.OpenReadOnly(ctx, indexPath, schema)
		if err != nil && !errors.Is(err, sqlite.ErrForeign) {
			if !errors.Is(err, fs.ErrNotExist) {
				opts.Logger.Warn("memory: the index cannot be read as it is: building it in memory from the files", "err", err)
			}
			s.readOnly = false
			s.db, err = sqlite.OpenMemory(ctx, schema)
		}
	} else {
		if err = os.MkdirAll(filepath.Dir(indexPath), 0o755); err != nil {
			return nil, fmt.Errorf("memory index: %w", err)
		}
		s.db, err = sqlite.Open(ctx, indexPath, schema)
	}
	if err != nil {
		return nil, fmt.Errorf("%w (the index is derived: delete it and it is rebuilt from the files)", err)
	}
	return s, nil
}

// Close closes the index.
func (s *Store) Close() error { return s.db.Close() }

// Append writes m as one line of its day's file (the timestamp is taken
// now when zero) and returns its id. The index learns of it at the next
// Sync.
func (s *Store) Append(m Memory) (string, error) {
	if m.Timestamp.IsZero() {
		m.Timestamp = time.Now()
	}
	return appendLine(s.dir, m)
}

// Sync reads whatever the files gained since the last Sync, by this
// process or another, into the index, replaying strengthening and decay.
// Malformed lines (a torn write from a killed process) are logged and
// skipped. Files that shrank or vanished (a git rollback) make it rebuild
// the index from the files as they are now.
func (s *Store) Sync(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sync(ctx)
}

func (s *Store) sync(ctx context.Context) error {
	days, err := dayFiles(s.dir)
	if err != nil {
		return fmt.Errorf("memory: list %s: %w", s.dir, err)
	}
	known := map[string]int64{}
	rows, err := s.db.QueryContext(ctx, `SELECT day, size FROM files`)
	if err != nil {
		return fmt.Errorf("memory index: %w", err)
	}
	for rows.Next() {
		var day string
		var size int64
		if err := rows.Scan(&day, &size); err != nil {
			rows.Close()
			return fmt.Errorf("memory index: %w", err)
		}
		known[day] = size
	}
	rows.Close()
	sizes := map[string]int64{}
	var stale []string
	for _, day := range days {
		st, err := os.Stat(dayPath(s.dir, day))
		if err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		sizes[day] = st.Size()
		if st.Size() > known[day] {
			stale = append(stale, day)
		}
	}
	for day, size := range known {
		if cur, ok := sizes[day]; !ok || cur < size {
			if s.readOnly {
				return s.inMemory(ctx)
			}
			s.opts.Logger.Warn("memory: a day file shrank or vanished (a rollback?): rebuilding the index from the files", "day", day)
			if err := s.reset(ctx); err != nil {
				return err
			}
			stale = days
			break
		}
	}
	if len(stale) == 0 {
		return nil
	}
	if s.readOnly {
		return s.inMemory(ctx)
	}
	tx, err := s.db.BeginTx(ctx, nil) // immediate: one process indexes at a time
	if err != nil {
		return fmt.Errorf("memory index: %w", err)
	}
	defer tx.Rollback()
	ing := &ingester{tx: tx, opts: s.opts, terms: map[string]int{}}
	if err := ing.prepare(ctx); err != nil {
		return fmt.Errorf("memory index: %w", err)
	}
	defer ing.close()
	for _, day := range stale {
		// Another process may have indexed this file meanwhile: the
		// transaction sees its latest size.
		var from int64
		if err := tx.QueryRowContext(ctx, `SELECT size FROM files WHERE day = ?`, day).Scan(&from); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("memory index: %w", err)
		}
		lines, next, err := readLines(dayPath(s.dir, day), from)
		if err != nil {
			return fmt.Errorf("memory: read %s: %w", dayPath(s.dir, day), err)
		}
		for _, l := range lines {
			if err := ing.add(ctx, day, l); err != nil {
				return fmt.Errorf("memory index: %s: %w", MakeID(day, l.offset), err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO files (day, size) VALUES (?, ?)`, day, next); err != nil {
			return fmt.Errorf("memory index: %w", err)
		}
	}
	if err := ing.finish(ctx); err != nil {
		return fmt.Errorf("memory index: %w", err)
	}
	return tx.Commit()
}

// inMemory replaces a read-only index that is behind the files with one in
// memory, private to this process, built from the files: nothing is
// written beside them.
func (s *Store) inMemory(ctx context.Context) error {
	db, err := sqlite.OpenMemory(ctx, schema)
	if err != nil {
		return err
	}
	// The file index was only read: closing it has nothing to report
	// that matters now that the in-memory one replaces it.
	_ = s.db.Close()
	s.db, s.readOnly = db, false
	return s.sync(ctx)
}

// Rebuild empties the index and reads every file again.
func (s *Store) Rebuild(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.reset(ctx); err != nil {
		return err
	}
	return s.sync(ctx)
}

// reset empties every derived table.
func (s *Store) reset(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("memory index: %w", err)
	}
	defer tx.Rollback()
	for _, q := range []string{`DELETE FROM files`, `DELETE FROM memories`, `DELETE FROM vectors`, `DELETE FROM terms`,
		`INSERT INTO memories_fts (memories_fts) VALUES ('delete-all')`, `DELETE FROM meta WHERE key = 'last_decay'`} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("memory index: reset: %w", err)
		}
	}
	return tx.Commit()
}

// ingester adds lines to the index inside one transaction.
type ingester struct {
	tx        *sql.Tx
	opts      Options
	insert    *sql.Stmt
	fts       *sql.Stmt
	use       *sql.Stmt
	lastDecay float64
	decayed   bool
	terms     map[string]int // memories per word, added to the terms table at the end
}

func (g *ingester) prepare(ctx context.Context) error {
	var err error
	if g.insert, err = g.tx.PrepareContext(ctx, `INSERT OR IGNORE INTO memories
		(id, day, ts, unix, author, step, written, weight, touched, situation, description, line)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`); err != nil {
		return err
	}
	if g.fts, err = g.tx.PrepareContext(ctx, `INSERT INTO memories_fts (rowid, situation, description) VALUES (?, ?, ?)`); err != nil {
		return err
	}
	if g.use, err = g.tx.PrepareContext(ctx, `UPDATE memories SET weight = min(1.0, weight + ?), touched = max(touched, ?) WHERE id = ?`); err != nil {
		return err
	}
	var v sql.NullFloat64
	err = g.tx.QueryRowContext(ctx, `SELECT CAST(value AS REAL) FROM meta WHERE key = 'last_decay'`).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	g.lastDecay = v.Float64
	return nil
}

func (g *ingester) close() {
	for _, st := range []*sql.Stmt{g.insert, g.fts, g.use} {
		if st != nil {
			st.Close()
		}
	}
}

func (g *ingester) add(ctx context.Context, day string, l line) error {
	m, err := decode(l.text)
	if err != nil {
		g.opts.Logger.Warn("memory: skipping a malformed line", "id", MakeID(day, l.offset), "err", err, "line", clip.Text(string(l.text), 200))
		return nil
	}
	unix := float64(m.Timestamp.UnixNano()) / 1e9
	id := MakeID(day, l.offset)
	res, err := g.insert.ExecContext(ctx, id, day, m.Timestamp.UTC().Format(time.RFC3339Nano), unix, m.Author, m.Step,
		m.Weight, m.Weight, unix, m.Situation, m.Description, string(l.text))
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // already indexed
	}
	seq, err := res.LastInsertId()
	if err != nil {
		return err
	}
	if _, err := g.fts.ExecContext(ctx, seq, m.Situation, m.Description); err != nil {
		return err
	}
	for _, w := range words(m.Situation+"\n"+m.Description, 0) {
		g.terms[w]++
	}
	for _, used := range m.Used {
		if _, err := g.use.ExecContext(ctx, g.opts.Strengthen, unix, used); err != nil {
			return err
		}
	}
	if m.Decay != nil {
		// Every earlier memory loses weight by how long it sat idle: since
		// its last use, or since the previous pass if that came later.
		_, err := g.tx.ExecContext(ctx, `UPDATE memories
			SET weight = max(?1, weight * pow(0.5, (?2 - max(touched, ?3)) / ?4))
			WHERE seq < ?5 AND ?2 > max(touched, ?3) AND weight > ?1`,
			g.opts.Floor, unix, g.lastDecay, m.Decay.HalfLifeHours*3600, seq)
		if err != nil {
			return err
		}
		g.lastDecay = math.Max(g.lastDecay, unix)
		g.decayed = true
	}
	return nil
}

func (g *ingester) finish(ctx context.Context) error {
	for w, n := range g.terms {
		if _, err := g.tx.ExecContext(ctx, `INSERT INTO terms (term, docs) VALUES (?, ?)
			ON CONFLICT (term) DO UPDATE SET docs = docs + excluded.docs`, w, n); err != nil {
			return err
		}
	}
	if !g.decayed {
		return nil
	}
	_, err := g.tx.ExecContext(ctx, `INSERT OR REPLACE INTO meta (key, value) VALUES ('last_decay', ?)`, g.lastDecay)
	return err
}

// LastDecay is when the last maintenance decay pass ran (zero if never).
func (s *Store) LastDecay(ctx context.Context) (time.Time, error) {
	if err := s.Sync(ctx); err != nil {
		return time.Time{}, err
	}
	var v sql.NullFloat64
	err := s.db.QueryRowContext(ctx, `SELECT CAST(value AS REAL) FROM meta WHERE key = 'last_decay'`).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, fmt.Errorf("memory index: %w", err)
	}
	if !v.Valid || v.Float64 == 0 {
		return time.Time{}, nil
	}
	sec, frac := math.Modf(v.Float64)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
}

// decodeEntry turns an index row back into an Entry.
func decodeEntry(seq int64, id, lineText string, current float64) (Entry, error) {
	var m Memory
	if err := json.Unmarshal([]byte(lineText), &m); err != nil {
		return Entry{}, fmt.Errorf("memory index: %s: %w", id, err)
	}
	return Entry{ID: id, Memory: m, Current: current, Seq: seq}, nil
}
