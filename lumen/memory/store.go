package memory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver: pure Go, FTS5, JSON1
)

// schemaVersion is the index's PRAGMA user_version. The index is derived:
// one of another version is dropped and rebuilt from the files.
const schemaVersion = 4

var schema = []string{
	`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
	// What the index was built from: per day file, the bytes indexed (up
	// to the last complete line) and their SHA-256, the size and
	// modification time seen then, and when that was (all times in unix
	// nanoseconds).
	`CREATE TABLE files (day TEXT PRIMARY KEY, indexed INTEGER NOT NULL, sha256 TEXT NOT NULL, size INTEGER NOT NULL, mtime INTEGER NOT NULL, checked INTEGER NOT NULL)`,
	// importance: what the memory was judged worth when written; strength:
	// importance plus every use; weight: the spec's weight, settled up to
	// the decay passes at mset (pending decay is applied when read);
	// touched: last access (written or used).
	`CREATE TABLE memories (
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
		line TEXT NOT NULL)`,
	`CREATE INDEX memories_author ON memories (author, seq)`,
	`CREATE INDEX memories_step ON memories (step, seq)`,
	`CREATE INDEX memories_day ON memories (day, seq)`,
	// Old-style references ("DAY@OFFSET") to lines written without an id:
	// pinned ones come from a migrate memory and survive edits of the file;
	// live ones are the offsets as the files are now.
	`CREATE TABLE aliases (alias TEXT PRIMARY KEY, id TEXT NOT NULL, pinned INTEGER NOT NULL) WITHOUT ROWID`,
	// Contentless: the text is in memories.line; bm25 needs only the index.
	`CREATE VIRTUAL TABLE memories_fts USING fts5 (
		situation, description, content='', tokenize='unicode61 remove_diacritics 2')`,
	// How many memories each word occurs in, read from the full-text index.
	`CREATE VIRTUAL TABLE memories_vocab USING fts5vocab (memories_fts, 'row')`,
	// Per goal (lower-cased name): when a goal memory last named it, and
	// the last memory of any author whose data names it.
	`CREATE TABLE goals (goal TEXT PRIMARY KEY, pursued REAL NOT NULL, pursued_seq INTEGER NOT NULL, touched_seq INTEGER NOT NULL) WITHOUT ROWID`,
	// Embeddings by the hash of the text embedded, so they survive rebuilds.
	`CREATE TABLE vectors (hash BLOB NOT NULL, model TEXT NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (hash, model)) WITHOUT ROWID`,
}

// derivedTables are emptied by a rebuild; vectors stay (they are keyed by
// content and cost money to make).
var derivedTables = []string{"files", "memories", "aliases", "goals"}

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
	// ReadOnly never writes under the memory directory: Append fails, and
	// an index that is missing, stale or not writable is rebuilt in memory
	// instead of on disk. An existing writable index is still brought up
	// to date (it is derived data).
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
	db        *sql.DB
	inMemory  bool // the index lives in this process only
	readOnly  bool // the on-disk index is opened read-only
	decay     decayState
}

// decayState is the replayed decay: the latest pass time (running
// maximum, unix seconds) and the half-life in seconds it applies.
type decayState struct{ max, halfLife float64 }

// Open opens the memory under dir (data/memory) with its index at
// indexPath. Unless opts.ReadOnly, a missing memory directory is created
// (git does not keep empty directories) and so is the index.
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
	if !opts.ReadOnly {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("memory directory %s: %w", dir, err)
		}
	}
	s := &Store{dir: dir, indexPath: indexPath, opts: opts}
	if err := s.openIndex(); err != nil {
		return nil, err
	}
	return s, nil
}

// Close closes the index.
func (s *Store) Close() error { return s.db.Close() }

// InMemory reports whether the index is held in this process only (a
// read-only instance whose index was missing or stale).
func (s *Store) InMemory() bool { return s.inMemory }

// openIndex opens the on-disk index read-write (creating it unless
// ReadOnly); when that is not possible it opens it read-only, or builds
// one in memory.
func (s *Store) openIndex() error {
	_, statErr := os.Stat(s.indexPath)
	exists := statErr == nil
	if !s.opts.ReadOnly || exists {
		mode := "rw"
		if !s.opts.ReadOnly {
			mode = "rwc"
			if err := os.MkdirAll(filepath.Dir(s.indexPath), 0o755); err != nil && !errors.Is(err, os.ErrPermission) && !isReadOnlyFS(err) {
				return fmt.Errorf("memory index: %w", err)
			}
		}
		db, err := openDB(s.indexPath, mode)
		if err == nil {
			if err = prepareSchema(db); err == nil {
				s.db = db
				return nil
			}
			db.Close()
		}
		if exists {
			s.opts.Logger.Debug("memory index: cannot write it; reading it as it is", "path", s.indexPath, "err", err)
			mode := "ro"
			if _, err := os.Stat(s.indexPath + "-wal"); errors.Is(err, os.ErrNotExist) {
				// No write-ahead log: the file is complete, and SQLite
				// need not create its side files (it cannot, here).
				mode = "immutable"
			}
			if db, err := openDB(s.indexPath, mode); err == nil {
				var v int
				if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err == nil && v == schemaVersion {
					s.db, s.readOnly = db, true
					return nil
				}
				db.Close()
			}
		} else if !s.opts.ReadOnly {
			s.opts.Logger.Warn("memory index: cannot create it; keeping it in memory", "path", s.indexPath, "err", err)
		}
	}
	return s.useMemory()
}

func isReadOnlyFS(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe) && pe.Err.Error() == "read-only file system"
}

// useMemory replaces the index with an empty one in this process.
func (s *Store) useMemory() error {
	if s.db != nil {
		s.db.Close()
	}
	db, err := openDB("", "memory")
	if err != nil {
		return fmt.Errorf("memory index in memory: %w", err)
	}
	if err := prepareSchema(db); err != nil {
		db.Close()
		return fmt.Errorf("memory index in memory: %w", err)
	}
	s.db, s.inMemory, s.readOnly = db, true, false
	return nil
}

// openDB opens SQLite at path: mode rwc (create), rw, ro, immutable (read
// only, no locks, no side files), or memory.
func openDB(path, mode string) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(30000)")
	q.Add("_pragma", "cache_size(-65536)") // up to 64 MiB: a rebuild spills no pages before it commits
	q.Add("_txlock", "immediate")
	u := url.URL{Scheme: "file", Opaque: (&url.URL{Path: path}).EscapedPath()}
	switch mode {
	case "memory":
		u.Opaque = ":memory:"
	case "ro":
		q.Set("mode", "ro")
	case "immutable":
		q.Set("mode", "ro")
		q.Set("immutable", "1")
	default:
		q.Set("mode", mode)
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
	}
	u.RawQuery = q.Encode()
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, err
	}
	if mode == "memory" {
		db.SetMaxOpenConns(1) // every connection would get its own empty database
	}
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// prepareSchema creates the tables, or drops and recreates them when the
// index was made by another version of this code.
func prepareSchema(db *sql.DB) error {
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	if v == schemaVersion {
		return nil
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := tx.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil || v == schemaVersion {
		return err // another process created it meanwhile
	}
	rows, err := tx.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%fts_%'
		ORDER BY name LIKE '%vocab' DESC`) // a vocabulary table goes before the table it reads
	if err != nil {
		return err
	}
	var old []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		old = append(old, name)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows.Close()
	for _, t := range old {
		if _, err := tx.Exec(`DROP TABLE IF EXISTS "` + t + `"`); err != nil {
			return err
		}
	}
	for _, stmt := range schema {
		if _, err := tx.Exec(stmt); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(`PRAGMA user_version = ` + strconv.Itoa(schemaVersion)); err != nil {
		return err
	}
	return tx.Commit()
}

// Append writes m as one line of its day's file (the timestamp is taken
// now when zero, the id made when empty) and returns its id. The index
// learns of it at the next Sync.
func (s *Store) Append(m Memory) (string, error) {
	if s.opts.ReadOnly {
		return "", errors.New("memory: the instance is open read-only; nothing can be written")
	}
	if m.Timestamp.IsZero() {
		m.Timestamp = time.Now()
	}
	return appendLine(s.dir, m)
}

// fileState is a day file as the index recorded it.
type fileState struct {
	indexed int64 // bytes read into the index, up to the last complete line
	sha     string
	size    int64
	mtime   int64
	checked int64 // when size and mtime were seen
}

// trusted reports whether a file whose size and modification time are as
// recorded can be taken as unchanged. Not when it was modified within
// racyWindow of being recorded: a same-length edit in the same clock tick
// would keep both (git's "racily clean" entries).
func (f fileState) trusted(size, mtime int64) bool {
	return size == f.size && mtime == f.mtime && f.mtime < f.checked-int64(racyWindow)
}

// racyWindow covers the coarse clock file times are taken from.
const racyWindow = time.Second

// plan is what Sync has to do to bring the index up to date.
type plan struct {
	rebuild string       // why everything must be read again; "" if not
	appends []fileUpdate // files that only gained lines, in day order
	touches []fileUpdate // files whose size or time changed without a new complete line
}

type fileUpdate struct {
	day  string
	from int64
	data []byte
	size int64
	time int64
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
// complete lines after them are new.
func (s *Store) check(ctx context.Context, q querier) (*plan, error) {
	days, err := dayFiles(s.dir)
	if err != nil {
		return nil, fmt.Errorf("memory: list %s: %w", s.dir, err)
	}
	known := map[string]fileState{}
	rows, err := q.QueryContext(ctx, `SELECT day, indexed, sha256, size, mtime, checked FROM files`)
	if err != nil {
		return nil, fmt.Errorf("memory index: %w", err)
	}
	lastKnown := ""
	for rows.Next() {
		var day string
		var f fileState
		if err := rows.Scan(&day, &f.indexed, &f.sha, &f.size, &f.mtime, &f.checked); err != nil {
			rows.Close()
			return nil, fmt.Errorf("memory index: %w", err)
		}
		known[day] = f
		lastKnown = max(lastKnown, day)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memory index: %w", err)
	}
	rows.Close()
	p := &plan{}
	onDisk := map[string]bool{}
	for _, day := range days {
		onDisk[day] = true
		st, err := os.Stat(dayPath(s.dir, day))
		if err != nil {
			return nil, fmt.Errorf("memory: %w", err)
		}
		k, ok := known[day]
		mtime := st.ModTime().UnixNano()
		if ok && k.trusted(st.Size(), mtime) {
			continue
		}
		if ok && st.Size() < k.indexed {
			p.rebuild = "day file " + day + " shrank"
			return p, nil
		}
		if !ok && day < lastKnown {
			p.rebuild = "day file " + day + " appeared before the last indexed day"
			return p, nil
		}
		data, err := os.ReadFile(dayPath(s.dir, day))
		if err != nil {
			return nil, fmt.Errorf("memory: %w", err)
		}
		if ok && hashHex(data[:k.indexed]) != k.sha {
			p.rebuild = "day file " + day + " was edited"
			return p, nil
		}
		u := fileUpdate{day: day, from: k.indexed, data: data, size: st.Size(), time: mtime}
		if _, end := splitLines(data, k.indexed); end == k.indexed {
			if !ok || st.Size() != k.size || mtime != k.mtime || time.Now().UnixNano()-mtime > int64(racyWindow) {
				p.touches = append(p.touches, u) // record what was seen, so the next check can trust it
			}
			continue
		}
		if ok && day < lastKnown {
			p.rebuild = "day file " + day + " gained lines after a later day was indexed"
			return p, nil
		}
		p.appends = append(p.appends, u)
	}
	for day := range known {
		if !onDisk[day] {
			p.rebuild = "day file " + day + " was removed"
			return p, nil
		}
	}
	return p, nil
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
		s.opts.Logger.Info("memory index: stale and not writable here; rebuilding it in memory", "path", s.indexPath)
		if err := s.useMemory(); err != nil {
			return err
		}
		p.rebuild = "the on-disk index cannot be updated"
	}
	tx, err := s.db.BeginTx(ctx, nil) // immediate: one process indexes at a time
	if err != nil {
		return fmt.Errorf("memory index: %w", err)
	}
	defer tx.Rollback()
	if p.rebuild == "" {
		// Another process may have synced meanwhile: check again under
		// the write lock.
		if p, err = s.check(ctx, tx); err != nil {
			return err
		}
	}
	if p.rebuild != "" {
		if !force && !s.inMemory {
			s.opts.Logger.Warn("memory index: rebuilding from the files", "why", p.rebuild)
		}
		err = s.rebuildTx(ctx, tx)
	} else {
		err = s.appendTx(ctx, tx, p)
	}
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("memory index: %w", err)
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
		files = append(files, fileUpdate{day: day, data: data, size: st.Size(), time: st.ModTime().UnixNano()})
		collectPinned(data, pinned)
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
		if err := ing.recordFile(ctx, f.day, f.from, f.data[:f.from], f.size, f.time); err != nil {
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
