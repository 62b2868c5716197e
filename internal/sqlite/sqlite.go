// Package sqlite is the one way the kernels open their SQLite files
// (modernc.org/sqlite): hermitcrab's store, lumen's memory index, solve's
// kernel.db and a hermitcrab beach's database.
//
// What every file opened here gets:
//
//   - The DSN is built with net/url, so a path with '#', '?', '%' or spaces
//     opens exactly that file.
//   - A marker: PRAGMA application_id is set to the kernel's constant when
//     the file is created (HermitcrabID "HCRB", LumenID "LUMN", SolveID
//     "SOLV", BeachID "BECH"; readable in the file header at offset 68). A
//     file that is not ours is refused before anything is written to it: not SQLite, another
//     application_id, or no application_id with tables the kernel does not
//     recognise (Schema.Legacy recognises the files written before the
//     marker existed, which are adopted). The header is read as a plain file
//     first; when SQLite has to look inside, it does so through a read-only
//     connection, immutable when no WAL is in use, so not even SQLite's
//     side files appear beside a foreign database.
//   - One migration scheme: PRAGMA user_version counts the Schema.Steps
//     applied; each step runs in its own transaction together with the
//     version bump, so a crash leaves the file at a step boundary and the
//     next open continues. A file from a newer kernel (more steps than this
//     one knows) is refused rather than misread.
//   - WAL journal mode (set only once the file is known to be ours),
//     synchronous=NORMAL (a crash loses no committed transaction's
//     consistency; a power cut may lose the last ones), foreign keys on,
//     and one busy timeout (BusyTimeout) on every connection.
//   - One transaction mode: every transaction begun with BeginTx on a
//     read-write handle is BEGIN IMMEDIATE. It takes the write lock at once
//     (waiting up to the busy timeout), so a transaction that reads and then
//     writes can never fail half-way with SQLITE_BUSY because another
//     process wrote in between, which a deferred transaction upgrading its
//     lock does in WAL mode. Plain queries outside a transaction are not
//     serialised.
//   - Two processes creating the same new file at once both succeed: every
//     step re-reads the marker and version under the write lock.
//
// Read-only opening (OpenReadOnly) never creates a file and never migrates:
// a missing file is an error wrapping fs.ErrNotExist (an empty one too,
// wrapping ErrEmpty, whose message says so), and a file at an
// older version asks for a command that writes. The connection is opened
// with query_only. In a directory the process can write, SQLite adds its
// usual -wal and -shm side files while it reads (they let a reader see a
// concurrent writer's commits consistently); when no WAL is in use and the
// file can be written, it is opened read-write (still query_only), so that
// closing removes them as a writer's close does and a read leaves nothing
// behind (mode=ro cannot checkpoint, and left both). In a directory it cannot
// write, SQLite cannot create them: when there is neither a -shm file nor
// a non-empty -wal file the file is opened immutable=1 (no locks, no side
// files; the main file is complete, since a writer that closes cleanly
// checkpoints and removes both), and otherwise (a writer has it open, or
// crashed) it is read with mode=ro through the WAL so its commits are seen.
// Immutable means SQLite assumes no one writes the file meanwhile: a writer
// with more rights than the reader (another user, or root) that starts
// while a read-only command runs in such a directory, and checkpoints its
// WAL into the main file during a read, can make that read fail or return
// a mix of old and new rows without any error (seen in a test: counts off
// while a writer rewrote and checkpointed). It never damages the file. A
// writer that already has the file open when the command starts is read
// through its WAL, safely.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	msqlite "modernc.org/sqlite" // driver "sqlite": pure Go, JSON1, FTS5
)

// The application_id of each kernel's file: four ASCII letters, so the
// header says whose file it is to anyone who looks (xxd -s 68 -l 4 FILE).
const (
	HermitcrabID int32 = 0x48435242 // "HCRB": hermitcrab's store (DATA_DIR/hermitcrab.db)
	LumenID      int32 = 0x4C554D4E // "LUMN": lumen's memory index (.lumen/index.db)
	SolveID      int32 = 0x534F4C56 // "SOLV": solve's kernel.db
	BeachID      int32 = 0x42454348 // "BECH": a hermitcrab beach (hermitcrab beach serve's beach.db)
)

// known names the kernels' files, for the error that refuses one of them
// opened as another.
var known = map[int32]string{
	HermitcrabID: "a hermitcrab store",
	LumenID:      "a lumen memory index",
	SolveID:      "a solve kernel.db",
	BeachID:      "a hermitcrab beach",
}

// BusyTimeout is how long a connection waits for another's lock before
// failing with "database is locked". Lumen rebuilding a large index holds
// the write lock longest; other writers' transactions take milliseconds.
const BusyTimeout = 30 * time.Second

// ErrForeign is wrapped by the error that refuses a file that is not the
// kernel's.
var ErrForeign = errors.New("not this kernel's file")

// ErrEmpty is wrapped by OpenReadOnly's error for an empty (0-byte) file:
// it exists, but nothing has written it (Open makes it the kernel's).
// errors.Is(err, fs.ErrNotExist) holds for it too, since as with a missing
// file there is nothing to read; its message does not say the file is
// missing.
var ErrEmpty error = emptyFile{}

type emptyFile struct{}

func (emptyFile) Error() string        { return "the file is empty (0 bytes)" }
func (emptyFile) Is(target error) bool { return target == fs.ErrNotExist }

// Schema is what one kernel keeps in its file.
type Schema struct {
	// Name says what the file is, in errors: "solve kernel.db".
	Name string
	// ID is the application_id written when the file is created.
	ID int32
	// Steps[i] is the SQL that brings the file from user_version i to i+1.
	// Steps are only ever appended: a released step never changes.
	Steps []string
	// Legacy recognises a file this kernel wrote before it set an
	// application_id, and returns the user_version it corresponds to
	// (its content is then exactly what Steps[:version] makes). ok false
	// means the file is not the kernel's. Nil: no such files exist.
	Legacy func(ctx context.Context, q Querier) (version int, ok bool, err error)
	// ReadOnlyFrom is the fewest steps a file may have for OpenReadOnly to
	// read it; 0 means all of Steps. A kernel sets it when its later steps
	// only add tables its read-only commands never read, so those commands
	// keep working on a file no command has written since an upgrade.
	ReadOnlyFrom int
}

// Querier is what Legacy may read through: a *sql.DB, *sql.Conn or *sql.Tx.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Open opens the kernel's file at path for reading and writing, creating it
// when it does not exist (its directory must exist), refusing a file that
// is not the kernel's, and applying the steps it lacks.
func Open(ctx context.Context, path string, s *Schema) (*sql.DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open %s %s: %w", s.Name, path, err)
	}
	fail := func(err error) (*sql.DB, error) { return nil, fmt.Errorf("open %s %s: %w", s.Name, abs, err) }
	h, err := readHeader(abs)
	if err != nil {
		return fail(err)
	}
	if h.size > 0 {
		if err := precheck(ctx, abs, h, s); err != nil {
			return fail(err)
		}
	}
	if err := writable(abs, h.exists); err != nil {
		return fail(err)
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", dsn(abs, q))
	if err != nil {
		return fail(err)
	}
	// The file is ours, or new: only now may anything be written to it.
	// journal_mode is persistent, so once set every connection is in WAL.
	if err := setWAL(ctx, db); err != nil {
		closeErr := db.Close()
		if _, statErr := os.Stat(filepath.Dir(abs)); statErr != nil {
			return fail(errors.Join(fmt.Errorf("its directory: %w", statErr), closeErr))
		}
		var se *msqlite.Error
		if errors.As(err, &se) && se.Code()&0xff == sqliteReadOnly {
			err = fmt.Errorf("%w: SQLite cannot write it here (%v)", ErrReadOnly, err)
		}
		return fail(errors.Join(fmt.Errorf("setting WAL mode: %w", err), closeErr))
	}
	if err := migrate(ctx, db, s); err != nil {
		return fail(errors.Join(err, db.Close()))
	}
	return db, nil
}

// setWAL puts the file in WAL mode (a no-op when it is). Changing the mode
// needs every other connection's lock released, and SQLite answers
// SQLITE_BUSY at once instead of calling the busy handler when two
// connections wait for each other (two processes creating the file
// together): so it retries here, up to BusyTimeout.
func setWAL(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(BusyTimeout)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		var mode string
		err := db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		if err == nil {
			if mode != "wal" {
				return fmt.Errorf("SQLite kept journal mode %q: is the file on a file system without shared memory?", mode)
			}
			return nil
		}
		var se *msqlite.Error
		if !errors.As(err, &se) || se.Code()&0xff != sqliteBusy || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// sqliteBusy is SQLITE_BUSY, the primary result code of "database is locked".
const sqliteBusy = 5

// sqliteReadOnly is SQLITE_READONLY, the primary result code of "attempt
// to write a readonly database".
const sqliteReadOnly = 8

// ErrReadOnly is wrapped by Open's error for a file this process cannot
// write: the file itself, or its directory where SQLite must create the
// file or its -wal and -shm files. OpenReadOnly reads such a file.
var ErrReadOnly = errors.New("read-only")

// writable refuses, before SQLite is asked, a file Open could not write:
// SQLite would open it read-only and fail at the first write with "attempt
// to write a readonly database". It asks access(2), as SQLite would be
// answered, and refuses the directory only where SQLite must create a file
// in it (the database, or a missing -wal or -shm).
func writable(abs string, exists bool) error {
	if exists {
		// SQLite follows a symbolic link and keeps the -wal and -shm
		// files beside the file it names: check that file and directory.
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
	}
	dir := filepath.Dir(abs)
	if _, err := os.Stat(dir); !exists && err != nil {
		return nil // no directory: creating the file fails and says so
	}
	switch {
	case !exists && !dirWritable(dir):
		return fmt.Errorf("%w: the file does not exist, and this user cannot create files in %s", ErrReadOnly, dir)
	case exists && !fileWritable(abs):
		return fmt.Errorf("%w: this user cannot write the file", ErrReadOnly)
	case exists && !dirWritable(dir) && !sideFiles(abs):
		return fmt.Errorf("%w: this user cannot create files in %s, where SQLite keeps the database's -wal and -shm files", ErrReadOnly, dir)
	}
	return nil
}

// sideFiles reports whether abs's -wal and -shm files both exist and can
// be written (SQLite then needs no new file beside it).
func sideFiles(abs string) bool {
	return fileWritable(abs+"-wal") && fileWritable(abs+"-shm")
}

// OpenReadOnly opens the kernel's existing file at path for reading only.
// It never creates, migrates or writes the file; see the package doc for
// how it reads in a directory it cannot write.
func OpenReadOnly(ctx context.Context, path string, s *Schema) (*sql.DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open %s %s read-only: %w", s.Name, path, err)
	}
	fail := func(err error) (*sql.DB, error) {
		return nil, fmt.Errorf("open %s %s read-only: %w", s.Name, abs, err)
	}
	h, err := readHeader(abs)
	if err != nil {
		return fail(err)
	}
	if !h.exists {
		return fail(fmt.Errorf("%w: nothing has been written here yet", fs.ErrNotExist))
	}
	if h.size == 0 {
		return fail(fmt.Errorf("%w: nothing has been written to it, so it is no %s yet; it was left unchanged", ErrEmpty, s.Name))
	}
	if err := precheck(ctx, abs, h, s); err != nil {
		return fail(err)
	}
	db, err := sql.Open("sqlite", readOnlyDSN(abs, dirWritable(filepath.Dir(abs))))
	if err != nil {
		return fail(err)
	}
	st, err := identify(ctx, db, s)
	if err != nil {
		return fail(errors.Join(err, db.Close()))
	}
	switch {
	case st.version > len(s.Steps):
		err = newerError(s, st.version)
	case st.version < len(s.Steps) && (s.ReadOnlyFrom == 0 || st.version < s.ReadOnlyFrom):
		err = fmt.Errorf("it was written by an older %s (schema %d; this one reads %d): run a command that writes once to update it", kernelOf(s), st.version, len(s.Steps))
	}
	if err != nil {
		return fail(errors.Join(err, db.Close()))
	}
	return db, nil
}

// OpenMemory opens a new database in memory, private to this call, with
// every step applied: for a read-only command that shows what a new file
// would hold (hermitcrab's default shell) without creating one. It is gone
// when closed. Its journal is in memory, so a writer waits for readers.
func OpenMemory(ctx context.Context, s *Schema) (*sql.DB, error) {
	db, _, err := openMemory(s)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, db, s); err != nil {
		return nil, errors.Join(fmt.Errorf("open %s in memory: %w", s.Name, err), db.Close())
	}
	return db, nil
}

// openMemory opens a new, empty database in memory and returns its URI.
func openMemory(s *Schema) (*sql.DB, string, error) {
	q := url.Values{}
	q.Set("vfs", "memdb") // one database shared by the handle's connections
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	name := fmt.Sprintf("/%s-%d-%d", kernelOf(s), os.Getpid(), memories.Add(1))
	uri := (&url.URL{Scheme: "file", Path: name, RawQuery: q.Encode()}).String()
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		return nil, "", fmt.Errorf("open %s in memory: %w", s.Name, err)
	}
	// The database lives while one of its connections is open: keep every
	// connection the pool opens.
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	return db, uri, nil
}

// CopyToMemory copies the database src reads (opened by Open or
// OpenReadOnly with s) into a new database in memory, as OpenMemory makes
// one: a consistent snapshot of every page, its WAL's commits included. A
// read-only command that must add to what the file holds does so in the
// copy, without writing the file, for the cost of copying its pages
// rather than of making its content again. The copy is made in two steps
// (a private image, then SQLite's backup API into the database the
// handle's connections share), so for a moment it takes about three times
// the file's size in memory.
func CopyToMemory(ctx context.Context, src *sql.DB, s *Schema) (*sql.DB, error) {
	fail := func(err error) (*sql.DB, error) {
		return nil, fmt.Errorf("copy %s into memory: %w", s.Name, err)
	}
	var image []byte
	if err := raw(ctx, src, func(c driverConn) (err error) {
		image, err = c.Serialize()
		return err
	}); err != nil {
		return fail(err)
	}
	if len(image) < 100 {
		return fail(fmt.Errorf("a %d-byte image has no SQLite header", len(image)))
	}
	// The header of a file in WAL mode says so (bytes 18 and 19, its read
	// and write versions, are 2); a database in memory keeps no WAL, and
	// SQLite refuses to open one whose header asks for it.
	image[18], image[19] = 1, 1
	staging, _, err := openMemory(s)
	if err != nil {
		return nil, err
	}
	db, uri, err := openMemory(s)
	if err != nil {
		return nil, errors.Join(err, staging.Close())
	}
	// The database lives while one of its connections is open: hold one
	// while the backup's own connection (closed when it finishes) fills it.
	hold, err := db.Conn(ctx)
	if err == nil {
		err = raw(ctx, staging, func(c driverConn) error {
			if err := c.Deserialize(image); err != nil {
				return err
			}
			bk, err := c.NewBackup(uri)
			if err != nil {
				return err
			}
			if _, err := bk.Step(-1); err != nil {
				return errors.Join(err, bk.Finish())
			}
			return bk.Finish()
		})
		err = errors.Join(err, hold.Close())
	}
	if err = errors.Join(err, staging.Close()); err != nil {
		return fail(errors.Join(err, db.Close()))
	}
	return db, nil
}

// driverConn is what CopyToMemory needs of the driver's connection.
type driverConn interface {
	Serialize() ([]byte, error)
	Deserialize([]byte) error
	NewBackup(dstURI string) (*msqlite.Backup, error)
}

// raw runs fn on one of db's connections as the driver made it.
func raw(ctx context.Context, db *sql.DB, fn func(driverConn) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(driverConn)
		if !ok {
			return fmt.Errorf("the driver's connection (%T) cannot copy a database", dc)
		}
		return fn(c)
	})
	return errors.Join(err, conn.Close())
}

// memories numbers the in-memory databases of this process.
var memories atomic.Int64

// Tables lists the names of the tables in the file, for Legacy.
func Tables(ctx context.Context, q Querier) (map[string]bool, error) {
	rows, err := q.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	names := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names[n] = true
	}
	return names, rows.Err()
}

// dsn is the file: URI of abs with query q. The path is escaped by
// net/url, so '#', '?', '%' and spaces are part of the name.
func dsn(abs string, q url.Values) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive: file:///C:/dir/kernel.db
	}
	return (&url.URL{Scheme: "file", Path: p, RawQuery: q.Encode()}).String()
}

// readOnlyDSN opens abs for reading only. Where the directory cannot be
// written and no connection has the file open in WAL mode, SQLite could
// not create its -shm file: immutable=1 reads the main file alone, which
// then holds every commit. Where the directory and the file can be written
// and no WAL is in use, the file is opened read-write with query_only (no
// statement may write): a read-only connection cannot checkpoint, so the
// last one to close leaves the -wal and -shm files it made behind, where a
// read-write one removes them as a writer does, and a command that only
// reads leaves nothing beside the file.
func readOnlyDSN(abs string, writableDir bool) string {
	q := url.Values{}
	q.Set("mode", "ro")
	switch inUse := walInUse(abs); {
	case !writableDir && !inUse:
		q.Set("immutable", "1")
	case writableDir && !inUse && fileWritable(abs):
		q.Set("mode", "rw")
	}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Add("_pragma", "query_only(1)")
	return dsn(abs, q)
}

// walInUse reports whether abs's WAL may hold commits or be written next:
// its -wal file is not empty, or it is empty beside a -shm file, as it is
// while a connection has the file open and has not written since its last
// checkpoint (its next commit goes there). A -wal or -shm file alone is
// what a crash between the two deletions of a clean close leaves.
func walInUse(abs string) bool {
	wal, err := os.Stat(abs + "-wal")
	if err != nil {
		return false
	}
	if wal.Size() > 0 {
		return true
	}
	_, err = os.Stat(abs + "-shm")
	return err == nil
}

// header is what the first 100 bytes of a file say, read without SQLite.
type header struct {
	exists  bool
	size    int64
	appID   int32
	version int32 // user_version
}

// readHeader reads path's SQLite header. A missing file is no error; a
// file that is not SQLite is.
func readHeader(path string) (header, error) {
	// Stat before opening: opening a FIFO would wait for a writer forever,
	// and a device (/dev/null) is no place for a database.
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return header{}, nil
	}
	if err != nil {
		return header{}, err
	}
	switch {
	case st.IsDir():
		return header{}, errors.New("it is a directory: give the path of the database file")
	case !st.Mode().IsRegular():
		return header{}, fmt.Errorf("it is not a regular file (%s): give the path of the database file", st.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return header{}, err
	}
	defer func() { _ = f.Close() }() // read only: what was read is the answer
	h := header{exists: true, size: st.Size()}
	if h.size == 0 {
		return h, nil // an empty file is an empty database: SQLite makes it
	}
	var b [100]byte
	if _, err := io.ReadFull(f, b[:]); err != nil || string(b[:16]) != "SQLite format 3\x00" {
		return h, fmt.Errorf("%w: it is not a SQLite database (its first bytes are not \"SQLite format 3\"); refused, the file was not changed", ErrForeign)
	}
	h.version = int32(binary.BigEndian.Uint32(b[60:64]))
	h.appID = int32(binary.BigEndian.Uint32(b[68:72]))
	return h, nil
}

// check refuses a header marked by another application, or whose
// user_version no kernel writes, or that a newer kernel wrote.
func (h header) check(s *Schema) error {
	switch {
	case h.appID != 0 && h.appID != s.ID:
		return foreignID(s, h.appID)
	case h.version < 0:
		return badVersion(int(h.version))
	case h.appID == s.ID && int(h.version) > len(s.Steps):
		return newerError(s, int(h.version))
	}
	return nil
}

// badVersion refuses a negative user_version: no kernel counts steps below
// zero, so the header is damaged or another program's.
func badVersion(v int) error {
	return fmt.Errorf("%w: its user_version is %d, which no kernel writes; refused, the file was not changed", ErrForeign, v)
}

func foreignID(s *Schema, id int32) error {
	what, ok := known[id]
	if !ok {
		what = "another program's database"
	}
	return fmt.Errorf("%w: its application_id %#08x marks %s, where a %s was expected; refused, the file was not changed", ErrForeign, uint32(id), what, s.Name)
}

func newerError(s *Schema, version int) error {
	return fmt.Errorf("it was written by a newer %s (schema %d; this one knows %d): use that version, or another file", kernelOf(s), version, len(s.Steps))
}

func kernelOf(s *Schema) string { return strings.Fields(s.Name + " kernel")[0] }

// precheck makes sure an existing file is the kernel's (or empty) before
// the read-write connection writes anything to it. The header settles most
// cases; otherwise a read-only connection looks inside, immutable when no
// WAL is in use so that SQLite leaves no side file either.
func precheck(ctx context.Context, abs string, h header, s *Schema) (err error) {
	if err := h.check(s); err != nil || h.appID == s.ID {
		return err
	}
	db, err := sql.Open("sqlite", readOnlyDSN(abs, false))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	st, err := identify(ctx, db, s)
	if err != nil {
		return err
	}
	if st.version > len(s.Steps) {
		return newerError(s, st.version)
	}
	return nil
}

// state is what identify found.
type state struct {
	marked  bool // the application_id is the kernel's
	version int  // user_version, or Legacy's version
}

// identify decides whether the file behind q is the kernel's: marked, new
// (nothing in it), or recognised by Legacy. Anything else is refused.
func identify(ctx context.Context, q Querier, s *Schema) (state, error) {
	var id int32
	var version, objects int
	if err := q.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&id); err != nil {
		return state{}, err
	}
	if err := q.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return state{}, err
	}
	switch {
	case version < 0:
		return state{}, badVersion(version)
	case id == s.ID:
		return state{marked: true, version: version}, nil
	case id != 0:
		return state{}, foreignID(s, id)
	}
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&objects); err != nil {
		return state{}, err
	}
	if objects == 0 && version == 0 {
		return state{}, nil // a new file
	}
	if s.Legacy != nil {
		v, ok, err := s.Legacy(ctx, q)
		if err != nil {
			return state{}, fmt.Errorf("reading its tables: %w", err)
		}
		if ok {
			return state{version: v}, nil
		}
	}
	if objects == 0 {
		return state{}, fmt.Errorf("%w: it is empty but another program set its user_version to %d; refused, the file was not changed", ErrForeign, version)
	}
	tables, err := Tables(ctx, q)
	if err != nil {
		return state{}, err
	}
	names := slices.Sorted(maps.Keys(tables))
	if len(names) > 5 {
		names = append(names[:5], "…")
	}
	return state{}, fmt.Errorf("%w: it has no %s marker and holds tables this kernel does not know (%s); refused, the file was not changed", ErrForeign, s.Name, strings.Join(names, ", "))
}

// migrate marks the file and applies the steps it lacks, one transaction
// (BEGIN IMMEDIATE) per step. Each transaction reads the marker and the
// version again under the write lock, so processes opening the file at the
// same time apply each step once.
func migrate(ctx context.Context, db *sql.DB, s *Schema) error {
	for {
		done, err := migrateStep(ctx, db, s)
		if err != nil || done {
			return err
		}
	}
}

func migrateStep(ctx context.Context, db *sql.DB, s *Schema) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback() // a no-op after Commit
	st, err := identify(ctx, tx, s)
	if err != nil {
		return false, err
	}
	v := st.version
	switch {
	case v > len(s.Steps):
		return false, newerError(s, v)
	case v == len(s.Steps) && st.marked:
		return true, nil
	}
	if !st.marked {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", s.ID)); err != nil {
			return false, fmt.Errorf("marking it: %w", err)
		}
	}
	if v < len(s.Steps) {
		if _, err := tx.ExecContext(ctx, s.Steps[v]); err != nil {
			return false, fmt.Errorf("migrate schema %d → %d: %w", v, v+1, err)
		}
		v++
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v)); err != nil {
		return false, fmt.Errorf("migrate schema to %d: %w", v, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migrate schema to %d: %w", v, err)
	}
	return false, nil
}
