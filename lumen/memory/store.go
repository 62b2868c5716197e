package memory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/llmkernels/kernels/internal/sqldb"
	"github.com/llmkernels/kernels/internal/sqlite"
	"github.com/llmkernels/kernels/lumen/internal/filestat"
)

// schema is the index: application_id "LUMN". It is derived from the day
// files, so a new layout is a step that drops the old tables and creates
// the new ones; the next Sync refills them. Indexes from before the marker
// kept their layout's number in meta ('schema'): layout 3 is step 1's.
// Step 2 is the layout of stable ids: what each day file was indexed from
// (size, modification time, SHA-256), importance, strength and replayed
// weight per memory, old references, goal marks, vectors by content.
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
`, `
DROP TABLE IF EXISTS meta;
DROP TABLE IF EXISTS files;
DROP TABLE IF EXISTS memories;
DROP TABLE IF EXISTS memories_fts;
DROP TABLE IF EXISTS terms;
DROP TABLE IF EXISTS vectors;
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- What the index was built from: per day file, the bytes indexed (up to
-- the last complete line) and their SHA-256, the size and modification
-- time seen then, and when that was (times in unix nanoseconds).
-- hasher is the SHA-256 state after the bytes indexed, so lines appended
-- later extend the hash without reading the file again; tail is the
-- SHA-256 of the last 4 KiB indexed.
CREATE TABLE files (day TEXT PRIMARY KEY, indexed INTEGER NOT NULL, sha256 TEXT NOT NULL, hasher BLOB NOT NULL, tail TEXT NOT NULL,
	size INTEGER NOT NULL, mtime INTEGER NOT NULL, checked INTEGER NOT NULL);
-- importance: what the memory was judged worth when written; strength:
-- importance plus every use; weight: the spec's weight, settled up to the
-- decay passes at mset (pending decay is applied when read); touched:
-- last access (written or used).
CREATE TABLE memories (
	seq INTEGER PRIMARY KEY,
	id TEXT NOT NULL UNIQUE,
	day TEXT NOT NULL,
	offset INTEGER NOT NULL,
	unix REAL NOT NULL,
	author TEXT NOT NULL,
	step TEXT NOT NULL,
	importance REAL NOT NULL,
	strength REAL NOT NULL,
	weight REAL NOT NULL,
	touched REAL NOT NULL,
	mset REAL NOT NULL,
	cost REAL NOT NULL,
	model TEXT NOT NULL,
	text_hash BLOB NOT NULL,
	line TEXT NOT NULL
);
CREATE INDEX memories_author ON memories (author, seq);
CREATE INDEX memories_step ON memories (step, seq);
CREATE INDEX memories_day ON memories (day, seq);
-- Old-style references ("DAY@OFFSET") to lines written without an id:
-- pinned ones come from a migrate memory and survive edits of the file;
-- live ones are the offsets as the files are now.
CREATE TABLE aliases (alias TEXT PRIMARY KEY, id TEXT NOT NULL, pinned INTEGER NOT NULL) WITHOUT ROWID;
-- Contentless: the text is in memories.line; bm25 needs only the index.
CREATE VIRTUAL TABLE memories_fts USING fts5 (
	situation, description, content='', tokenize='unicode61 remove_diacritics 2'
);
-- How many memories each word occurs in (FTS5's own vocabulary table
-- counts by walking every posting: too slow for each query).
CREATE TABLE terms (term TEXT PRIMARY KEY, docs INTEGER NOT NULL) WITHOUT ROWID;
-- Per goal (lower-cased name): when a goal memory last named it, and the
-- last memory of any author whose data names it.
CREATE TABLE goals (goal TEXT PRIMARY KEY, pursued REAL NOT NULL, pursued_seq INTEGER NOT NULL, touched_seq INTEGER NOT NULL) WITHOUT ROWID;
-- Embeddings by the hash of the text embedded, so they survive rebuilds.
CREATE TABLE vectors (hash BLOB NOT NULL, model TEXT NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (hash, model)) WITHOUT ROWID;
`, `
-- The inode change time and number seen with size and mtime: an edit that
-- keeps the size and puts the modification time back changes them. Rows
-- from step 2 hold 0: their files are hashed once at the next check.
ALTER TABLE files ADD COLUMN ctime INTEGER NOT NULL DEFAULT 0;
ALTER TABLE files ADD COLUMN ino INTEGER NOT NULL DEFAULT 0;
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

// derivedTables are emptied by a rebuild; vectors stay (they are keyed by
// content and cost money to make).
var derivedTables = []string{"files", "memories", "aliases", "terms", "goals"}

// Options tune the store; zero fields take the defaults.
type Options struct {
	// Strengthen is added to a memory's weight each time it is used (capped
	// at 1); default 0.05.
	Strengthen float64
	// Floor is the lowest weight decay leaves; default 0.01.
	Floor float64
	// Embedder, when set, ranks relevance by embeddings instead of full text.
	Embedder *Embedder
	// Scoring weighs retrieval's three components; zero means
	// DefaultScoring.
	Scoring Scoring
	// ReadOnly creates and writes nothing: Append fails, the index is
	// opened read-only, and one that is missing, unreadable or behind the
	// day files is built in memory instead, for this process only.
	ReadOnly bool
	Logger   *slog.Logger
}

// Store is the memory of one instance: the day files under dir and the
// index beside them.
type Store struct {
	dir       string
	indexPath string
	opts      Options
	mu        sync.Mutex // one Sync at a time in this process
	db        *sqldb.DB
	inMemory  bool // the index lives in this process only
	readOnly  bool // the on-disk index is opened read-only
	decay     decayState
	// verified is when this process last hashed each day file whole and
	// found what the index was built from.
	verified map[string]time.Time
	// dims is, per embedding model, the vector size this process checked
	// every stored vector has.
	dims map[string]int
	// broken: a read found the index damaged; the next Sync rebuilds it.
	broken atomic.Bool
	// rebuilds counts the times this process read every file again (under
	// mu): the paths that extend the index are meant to avoid it.
	rebuilds int
	// background embeds memories without a vector (startEmbedding).
	background embedding
}

// decayState is the replayed decay: the latest pass time (running
// maximum, unix seconds) and the half-life in seconds it applies.
type decayState struct{ max, halfLife float64 }

// Open opens the memory under dir (data/memory) with its index at
// indexPath. Unless opts.ReadOnly, a missing memory directory is created
// (git does not keep empty directories) and so is the index. The index is
// not synced until the first read.
func Open(dir, indexPath string, opts Options) (*Store, error) {
	if opts.Strengthen == 0 {
		opts.Strengthen = 0.05
	}
	if opts.Floor == 0 {
		opts.Floor = 0.01
	}
	if opts.Scoring == (Scoring{}) {
		opts.Scoring = DefaultScoring
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ctx := context.Background()
	s := &Store{dir: dir, indexPath: indexPath, opts: opts, verified: map[string]time.Time{}, dims: map[string]int{}}
	if opts.ReadOnly {
		db, err := sqlite.OpenReadOnly(ctx, indexPath, schema)
		switch {
		case err == nil:
			s.db, s.readOnly = index(db), true
			return s, nil
		case errors.Is(err, sqlite.ErrForeign):
			return nil, err
		case !errors.Is(err, fs.ErrNotExist):
			opts.Logger.Warn("memory: the index cannot be read as it is: building it in memory from the files", "err", err)
		}
		return s, s.useMemory(ctx)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("memory directory %s: %w", dir, err)
	}
	if err := os.MkdirAll(filepath.Dir(indexPath), 0o755); err != nil {
		return nil, fmt.Errorf("memory index: %w", err)
	}
	db, err := sqlite.Open(ctx, indexPath, schema)
	if damaged(err) {
		opts.Logger.Warn("memory: the index is damaged: rebuilding it from the files", "path", indexPath, "err", err)
		if err = removeIndex(indexPath); err == nil {
			db, err = sqlite.Open(ctx, indexPath, schema)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w (the index is derived: delete it and it is rebuilt from the files)", err)
	}
	s.db = index(db)
	return s, nil
}

// index is the seam the index is written and read through.
func index(db *sql.DB) *sqldb.DB { return sqldb.New(db, sqldb.SQLite, "memory index") }

// damaged reports whether err says the index file is damaged (a disk
// fault, a torn copy): SQLite's SQLITE_CORRUPT or SQLITE_NOTADB. The file
// passed the check that it is this kernel's when it was opened, and it is
// derived from the day files, so it is rebuilt, never refused for ever.
func damaged(err error) bool {
	var e *msqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code() & 0xff {
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return true
	}
	return false
}

// removeIndex deletes a damaged index and its side files.
func removeIndex(path string) error {
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("memory: remove the damaged index: %w", err)
		}
	}
	return nil
}

// heal runs a read; when it finds the index damaged, the next Sync (the
// read's own, run again) rebuilds it from the files, on disk or, for a
// read-only instance, in memory.
func heal[T any](s *Store, read func() (T, error)) (T, error) {
	v, err := read()
	if damaged(err) {
		s.broken.Store(true)
		v, err = read()
	}
	return v, err
}

// repair replaces a damaged index with an empty one, filled by the
// rebuild that follows: on disk when this process may write it, else in
// memory.
func (s *Store) repair(ctx context.Context) error {
	s.broken.Store(false)
	if s.opts.ReadOnly || s.inMemory {
		s.opts.Logger.Warn("memory: the index is damaged: building it in memory from the files", "path", s.indexPath)
		return s.useMemory(ctx)
	}
	s.opts.Logger.Warn("memory: the index is damaged: rebuilding it from the files", "path", s.indexPath)
	_ = s.db.Close() // the file is being replaced: nothing it holds is kept
	if err := removeIndex(s.indexPath); err != nil {
		return err
	}
	db, err := sqlite.Open(ctx, s.indexPath, schema)
	if err != nil {
		return fmt.Errorf("memory index: %w", err)
	}
	s.db = index(db)
	return nil
}

// Close stops the background embedding, if any (what it stored stays),
// and closes the index.
func (s *Store) Close() error {
	s.stopEmbedding()
	return s.db.Close()
}

// InMemory reports whether the index is held in this process only (a
// read-only instance whose index was missing or stale).
func (s *Store) InMemory() bool { return s.inMemory }

// copyToMemory replaces the read-only index with a copy of it in memory,
// which this process may then extend: nothing is written beside the files.
func (s *Store) copyToMemory(ctx context.Context) error {
	db, err := sqlite.CopyToMemory(ctx, s.db.DB, schema)
	if err != nil {
		return err
	}
	_ = s.db.Close() // a read-only handle being replaced: nothing it held is lost
	s.db, s.inMemory, s.readOnly = index(db), true, false
	return nil
}

// useMemory replaces the index with an empty one in this process, filled
// at the next Sync: nothing is written beside the files.
func (s *Store) useMemory(ctx context.Context) error {
	db, err := sqlite.OpenMemory(ctx, schema)
	if err != nil {
		return err
	}
	if s.db != nil {
		_ = s.db.Close() // a read-only handle being replaced: nothing it held is lost
	}
	s.db, s.inMemory, s.readOnly = index(db), true, false
	return nil
}

// Append writes m as one line of its day's file (the timestamp is taken
// now when zero, the id made when empty) and returns its id. It then
// brings the index up to date, so that it never stays behind what this
// process wrote: a command that only reads (and cannot write the index)
// finds it current instead of building its own copy. The line is written
// when Append returns its id: an index that could not take it in is
// logged, and the next read tries again.
func (s *Store) Append(m Memory) (string, error) {
	if s.opts.ReadOnly {
		return "", errors.New("memory: the instance is open read-only; nothing can be written")
	}
	if m.Timestamp.IsZero() {
		m.Timestamp = time.Now()
	}
	id, err := appendLine(s.dir, m)
	if err != nil {
		return "", err
	}
	if err := s.Sync(context.Background()); err != nil {
		s.opts.Logger.Warn("memory: a line was written but not indexed; the next read indexes it", "id", id, "err", err)
	}
	return id, nil
}

// fileState is a day file as the index recorded it.
type fileState struct {
	indexed int64  // bytes read into the index, up to the last complete line
	sha     string // SHA-256 of those bytes
	hasher  []byte // the SHA-256 state after them
	tail    string // SHA-256 of their last tailWindow bytes
	seen    filestat.Stat
	checked int64 // when seen was stat'ed
}

// trusted reports whether a file whose stat is as recorded can be taken
// as unchanged. Not when it changed within racyWindow of being recorded:
// a same-length edit in the same clock tick would keep every time (git's
// "racily clean" entries).
func (f fileState) trusted(st filestat.Stat) bool {
	return st == f.seen && f.seen.Changed() < f.checked-int64(racyWindow)
}

const (
	// racyWindow covers the coarse clock file times are taken from.
	racyWindow = time.Second
	// reverify is how long a whole-file check holds in this process: a
	// file that only grew since is read from where the index stopped
	// (with the last tailWindow bytes before it compared), not hashed
	// whole again. Every process hashes a changed file whole at its first
	// read, so each command starts from a verified index, and a long run
	// catches an edit within reverify.
	reverify   = 5 * time.Second
	tailWindow = 4096
)

// plan is what Sync has to do to bring the index up to date.
type plan struct {
	rebuild string       // why everything must be read again; "" if not
	appends []fileUpdate // files that only gained lines, in day order
	touches []fileUpdate // files whose size or time changed without a new complete line
}

// fileUpdate is what was read of a day file: data holds its bytes from
// offset base on; lines are new from offset from; hashed is where the
// hasher state (nil: none, from offset 0) stops.
type fileUpdate struct {
	day    string
	base   int64
	from   int64
	hashed int64
	hasher []byte
	data   []byte
	stat   filestat.Stat // as seen when it was read (size: the bytes read)
}

func (p *plan) fresh() bool { return p.rebuild == "" && len(p.appends) == 0 && len(p.touches) == 0 }

// querier is what check needs: the database or a transaction.
type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// check compares the day files with what the index was built from. A
// file whose size and modification time are as recorded is taken as
// unchanged; any other is read and hashed: the bytes indexed must be
// unchanged (else the file was edited, and the index is rebuilt), and
// complete lines after them are new. A file hashed whole by this process
// within reverify that only grew is read from where the index stopped.
func (s *Store) check(ctx context.Context, q querier) (*plan, error) {
	days, err := dayFiles(s.dir)
	if err != nil {
		return nil, fmt.Errorf("memory: list %s: %w", s.dir, err)
	}
	type dayState struct {
		day string
		fileState
	}
	files, err := sqldb.List(ctx, q.QueryContext, "memory index", func(r *sql.Rows) (dayState, error) {
		var f dayState
		return f, r.Scan(&f.day, &f.indexed, &f.sha, &f.hasher, &f.tail, &f.seen.Size, &f.seen.Mtime, &f.seen.Ctime, &f.seen.Ino, &f.checked)
	}, `SELECT day, indexed, sha256, hasher, tail, size, mtime, ctime, ino, checked FROM files`)
	if err != nil {
		return nil, err
	}
	known := map[string]fileState{}
	lastKnown := ""
	for _, f := range files {
		known[f.day] = f.fileState
		lastKnown = max(lastKnown, f.day)
	}
	p := &plan{}
	onDisk := map[string]bool{}
	for _, day := range days {
		onDisk[day] = true
		path := dayPath(s.dir, day)
		st, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("memory: %w", err)
		}
		k, ok := known[day]
		now := filestat.Of(st)
		size := now.Size
		recent := ok && time.Since(s.verified[day]) < reverify
		switch {
		case ok && k.trusted(now):
			continue
		case recent && now == k.seen:
			continue // racily clean, but hashed whole moments ago
		case ok && size < k.indexed:
			p.rebuild = "day file " + day + " shrank"
			return p, nil
		case !ok && day < lastKnown:
			p.rebuild = "day file " + day + " appeared before the last indexed day"
			return p, nil
		}
		var u *fileUpdate
		if recent && size > k.seen.Size {
			if u, err = readGrowth(path, k, now); err != nil {
				return nil, err
			}
		}
		if u == nil {
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("memory: %w", err)
			}
			if ok && hashHex(data[:k.indexed]) != k.sha {
				p.rebuild = "day file " + day + " was edited"
				return p, nil
			}
			s.verified[day] = time.Now()
			now.Size = int64(len(data))
			u = &fileUpdate{day: day, from: k.indexed, data: data, stat: now}
		}
		u.day = day
		if _, end := splitLines(u.data, u.from-u.base); u.base+end == u.from {
			if !ok || u.stat != k.seen || time.Now().UnixNano()-u.stat.Changed() > int64(racyWindow) {
				p.touches = append(p.touches, *u) // record what was seen, so the next check can trust it
			}
			continue
		}
		// A file before the last indexed day that gained lines (the clock
		// was set back after running ahead) is read like any other: its
		// lines are indexed after what is there, in the order written. A
		// rebuild would place them before the later day's lines; rebuilding
		// at every read until the clock catches up would cost far more.
		p.appends = append(p.appends, *u)
	}
	for day := range known {
		if !onDisk[day] {
			p.rebuild = "day file " + day + " was removed"
			return p, nil
		}
	}
	return p, nil
}

// readGrowth reads what a file gained after the bytes indexed, with the
// tailWindow bytes before them, which must be as recorded; nil when they
// are not (the caller then hashes the file whole).
func readGrowth(path string, k fileState, st filestat.Stat) (*fileUpdate, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	defer func() { _ = f.Close() }() // read only: what was read is the answer
	lo := max(0, k.indexed-tailWindow)
	buf := make([]byte, st.Size-lo)
	n, err := f.ReadAt(buf, lo)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("memory: read %s: %w", path, err)
	}
	buf = buf[:n]
	if int64(n) < k.indexed-lo || hashHex(buf[:k.indexed-lo]) != k.tail || len(k.hasher) == 0 {
		return nil, nil
	}
	st.Size = lo + int64(n)
	return &fileUpdate{base: lo, from: k.indexed, hashed: k.indexed, hasher: k.hasher, data: buf, stat: st}, nil
}

func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Sync brings the index up to date with the files, written by this
// process or another: lines appended since are read in, replaying
// strengthening and decay; a day file edited, shortened, removed or
// inserted before the last one makes it rebuild from the files as they
// are now. Malformed lines (a torn write from a killed process) are
// logged and skipped.
func (s *Store) Sync(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sync(ctx, false)
}

// Rebuild empties the index and reads every file again.
func (s *Store) Rebuild(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sync(ctx, true)
}

func (s *Store) sync(ctx context.Context, force bool) error {
	if s.broken.Load() {
		if err := s.repair(ctx); err != nil {
			return err
		}
		force = true
	}
	err := s.syncOnce(ctx, force)
	if damaged(err) {
		if rerr := s.repair(ctx); rerr != nil {
			return errors.Join(err, rerr)
		}
		err = s.syncOnce(ctx, true)
	}
	return err
}

func (s *Store) syncOnce(ctx context.Context, force bool) error {
	p, err := s.check(ctx, s.db)
	if err != nil {
		return err
	}
	if force {
		p.rebuild = "asked to rebuild"
	}
	if p.fresh() || (s.readOnly && p.rebuild == "" && len(p.appends) == 0) {
		return s.loadDecay(ctx)
	}
	if s.readOnly {
		// The files only gained lines: extend a copy of the index in
		// memory, as a writer would extend the file. Anything else (and a
		// copy that fails) builds one from the files.
		copied := false
		if p.rebuild == "" {
			err := s.copyToMemory(ctx)
			if copied = err == nil; !copied {
				s.opts.Logger.Warn("memory index: behind the files, and it cannot be copied into memory: building it there from the files", "path", s.indexPath, "err", err)
			}
		}
		if !copied {
			s.opts.Logger.Debug("memory index: behind the files and opened read-only; building it in memory", "path", s.indexPath)
			if err := s.useMemory(ctx); err != nil {
				return err
			}
			p.rebuild = "the on-disk index is read-only"
		}
	}
	// Immediate: one process indexes at a time.
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		if p.rebuild == "" {
			// Another process may have synced meanwhile: check again under
			// the write lock.
			var err error
			if p, err = s.check(ctx, tx); err != nil {
				return err
			}
		}
		if p.rebuild != "" {
			if !force && !s.inMemory {
				s.opts.Logger.Warn("memory index: rebuilding from the files", "why", p.rebuild)
			}
			return s.rebuildTx(ctx, tx)
		}
		return s.appendTx(ctx, tx, p)
	})
	if err != nil {
		return err
	}
	return s.loadDecay(ctx)
}

// loadDecay reads the replayed decay state for weights computed on read.
func (s *Store) loadDecay(ctx context.Context) error {
	d, err := readDecay(ctx, s.db)
	if err != nil {
		return err
	}
	s.decay = d
	return nil
}

type rowQuerier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

func readDecay(ctx context.Context, q rowQuerier) (decayState, error) {
	var d decayState
	for key, dst := range map[string]*float64{"decay_max": &d.max, "decay_half_life": &d.halfLife} {
		var v string
		err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return d, fmt.Errorf("memory index: %w", err)
		}
		if *dst, err = strconv.ParseFloat(v, 64); err != nil {
			return d, fmt.Errorf("memory index: meta %s = %q: %w", key, v, err)
		}
	}
	return d, nil
}

// rebuildTx empties the derived tables and reads every day file.
func (s *Store) rebuildTx(ctx context.Context, tx *sql.Tx) error {
	s.rebuilds++
	// Up to 64 MiB of pages: a large rebuild spills none before it commits.
	if _, err := tx.ExecContext(ctx, `PRAGMA cache_size = -65536`); err != nil {
		return fmt.Errorf("memory index: %w", err)
	}
	for _, t := range derivedTables {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+t); err != nil {
			return fmt.Errorf("memory index: reset: %w", err)
		}
	}
	for _, q := range []string{`INSERT INTO memories_fts (memories_fts) VALUES ('delete-all')`, `DELETE FROM meta`} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("memory index: reset: %w", err)
		}
	}
	days, err := dayFiles(s.dir)
	if err != nil {
		return fmt.Errorf("memory: list %s: %w", s.dir, err)
	}
	var files []fileUpdate
	pinned := map[string]string{}
	for _, day := range days {
		path := dayPath(s.dir, day)
		st, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		seen := filestat.Of(st)
		seen.Size = int64(len(data))
		files = append(files, fileUpdate{day: day, data: data, stat: seen})
		collectPinned(data, pinned)
		s.verified[day] = time.Now()
	}
	ing, err := newIngester(ctx, tx, s.opts, pinned, true)
	if err != nil {
		return err
	}
	defer ing.close()
	for _, f := range files {
		if err := ing.file(ctx, f); err != nil {
			return err
		}
	}
	return ing.finish(ctx)
}

// appendTx reads the lines files gained.
func (s *Store) appendTx(ctx context.Context, tx *sql.Tx, p *plan) error {
	ing, err := newIngester(ctx, tx, s.opts, nil, false)
	if err != nil {
		return err
	}
	defer ing.close()
	for _, f := range p.appends {
		if err := ing.file(ctx, f); err != nil {
			return err
		}
	}
	for _, f := range p.touches {
		if err := ing.recordFile(ctx, f, f.from); err != nil {
			return err
		}
	}
	return ing.finish(ctx)
}

// collectPinned gathers the aliases migrate memories pinned, so a rebuild
// resolves old references as they were meant even when it reads them
// before the migrate memory.
func collectPinned(data []byte, into map[string]string) {
	if !bytes.Contains(data, []byte(`"migrate"`)) {
		return
	}
	lines, _ := splitLines(data, 0)
	for _, l := range lines {
		if !bytes.Contains(l.text, []byte(`"migrate"`)) {
			continue
		}
		if m, err := decode(l.text); err == nil {
			for ref, id := range migratedAliases(m) {
				into[ref] = id
			}
		}
	}
}

// currentWeight applies the decay passes not yet settled into a row's
// weight: passes compose, so one factor covers them all.
func (d decayState) currentWeight(weight, touched, mset, floor float64) float64 {
	ref := math.Max(touched, mset)
	if weight <= floor || d.halfLife <= 0 || d.max <= ref {
		return weight
	}
	return math.Max(floor, weight*math.Pow(0.5, (d.max-ref)/d.halfLife))
}

// LastDecay is when the last maintenance decay pass ran (zero if never).
func (s *Store) LastDecay(ctx context.Context) (time.Time, error) {
	return heal(s, func() (time.Time, error) { return s.lastDecay(ctx) })
}

func (s *Store) lastDecay(ctx context.Context) (time.Time, error) {
	if err := s.Sync(ctx); err != nil {
		return time.Time{}, err
	}
	return unixTime(s.decay.max), nil
}

func unixTime(v float64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	sec, frac := math.Modf(v)
	return time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3).UTC()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
