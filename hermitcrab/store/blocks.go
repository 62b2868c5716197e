package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/sqldb"
)

// AnyVersion as Put's or Delete's expect skips the version check.
const AnyVersion int64 = -1

// MaxNameLen is the longest block name ValidName accepts.
const MaxNameLen = 64

// ErrConflict is wrapped by every *ConflictError.
var ErrConflict = errors.New("version conflict")

// ErrTooLarge is wrapped by every error refusing a block over the size limit.
var ErrTooLarge = errors.New("block too large")

// Block is one stored block.
type Block struct {
	Name    string          `json:"name"`
	Data    json.RawMessage `json:"data"`
	Version int64           `json:"version"`
	Updated time.Time       `json:"updated"`
}

// ConflictError says a write was refused because the block is not at the
// version the writer read. It carries what is there now so that the writer
// (often an LLM) can redo its edit without another read.
type ConflictError struct {
	Name string `json:"name"`
	// Expected is the version the writer gave: 0 for "must not exist yet".
	Expected int64 `json:"expected"`
	// Current is the block's version now, 0 when it does not exist.
	Current int64 `json:"current"`
	// Data is the block's content now, nil when it does not exist.
	Data json.RawMessage `json:"data,omitempty"`

	deleting bool
}

func (e *ConflictError) Error() string {
	if e.deleting {
		return fmt.Sprintf("block %q was not deleted: you gave version %d but it is now version %d. Its current content: %s\nDelete with version %d if you still mean to", e.Name, e.Expected, e.Current, e.Data, e.Current)
	}
	switch {
	case e.Current == 0:
		return fmt.Sprintf("block %q was not written: you read version %d but it no longer exists (it was deleted); write it with version 0 to create it again", e.Name, e.Expected)
	case e.Expected == 0:
		return fmt.Sprintf("block %q was not written: it already exists at version %d (version 0 means create a new block). Its current content: %s\nMerge your change into this content and write again with version %d", e.Name, e.Current, e.Data, e.Current)
	}
	return fmt.Sprintf("block %q was not written: you read version %d but another writer changed it; it is now version %d. Its current content: %s\nRedo your edit on this content and write again with version %d", e.Name, e.Expected, e.Current, e.Data, e.Current)
}

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// ValidName checks a block name: 1 to 64 characters of a-z, 0-9, "_" and
// "-", starting with a letter or digit. Names are used as keys and file names,
// so path characters, dots, spaces and upper case are refused.
func ValidName(name string) error {
	const rule = `a block name is 1-64 characters of a-z, 0-9, "_" and "-", starting with a letter or digit`
	if name == "" {
		return errors.New("block name is empty: " + rule)
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("block name %q is %d characters: %s", name, len(name), rule)
	}
	pos := 0
	for _, r := range name {
		pos++
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || pos > 1 && (r == '_' || r == '-')
		if !ok {
			return fmt.Errorf("block name %q: %q at position %d is not allowed: %s", name, r, pos, rule)
		}
	}
	return nil
}

// checkBlock is what every block write path checks before touching the file.
func (s *Store) checkBlock(name string, data []byte) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if len(data) > s.maxBytes {
		return fmt.Errorf("block %q is %d bytes, over the limit of %d bytes (%w): compress old entries (summarise nine children into their parent's \"_\" and drop the detail) or split the block into smaller blocks", name, len(data), s.maxBytes, ErrTooLarge)
	}
	if err := validJSON(data); err != nil {
		return fmt.Errorf("block %q: %w", name, err)
	}
	return nil
}

func validJSON(data []byte) error {
	if json.Valid(data) {
		return nil
	}
	var v any
	err := json.Unmarshal(data, &v)
	if err == nil { // json.Valid and Unmarshal disagree only on encodings
		err = errors.New("invalid encoding")
	}
	return fmt.Errorf("not valid JSON (%v): send the whole block as one JSON value, e.g. {\"place\": 1, \"tree\": {\"0\": \"…\"}}", err)
}

// Put writes a block if it is at the version the caller read: expect is that
// version, 0 when the block must not exist yet, AnyVersion to write whatever
// is there. It returns the new version (1 for a new block). A mismatch
// changes nothing and returns a *ConflictError (wrapping ErrConflict) with
// the current version and content.
func (s *Store) Put(ctx context.Context, name string, data []byte, expect int64) (int64, error) {
	if err := s.checkBlock(name, data); err != nil {
		return 0, err
	}
	if expect < AnyVersion {
		return 0, fmt.Errorf("block %q: expected version %d: give the version you read, 0 for a new block, or %d (AnyVersion) to skip the check", name, expect, AnyVersion)
	}
	var version int64
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		cur, curData, err := currentBlock(ctx, tx, name)
		if err != nil {
			return err
		}
		if expect != AnyVersion && cur != expect {
			return &ConflictError{Name: name, Expected: expect, Current: cur, Data: curData}
		}
		version = cur + 1
		return putBlock(ctx, tx, name, data, version)
	})
	if err != nil {
		return 0, err
	}
	return version, nil
}

// Update changes a block in one transaction: edit gets the current content
// and returns the new one, which is checked as Put checks it and written as
// the next version. Writers queue on the database's write lock, so no
// concurrent update is lost and none has to retry. A missing block is an
// error wrapping ErrNotFound; an edit error is returned as it is.
func (s *Store) Update(ctx context.Context, name string, edit func(json.RawMessage) ([]byte, error)) (int64, error) {
	return s.UpdateCreating(ctx, name, func(data json.RawMessage, _ func(string) (bool, error)) ([]byte, map[string][]byte, error) {
		next, err := edit(data)
		return next, nil, err
	})
}

// UpdateCreating is Update whose edit may also create new blocks in the same
// transaction (a block moving part of itself into another): edit gets the
// current content and a test of whether a name is taken, and returns the
// new content and the blocks to create, each checked as Put checks it and
// refused if it exists. All is written, or on any error nothing.
func (s *Store) UpdateCreating(ctx context.Context, name string, edit func(data json.RawMessage, taken func(string) (bool, error)) ([]byte, map[string][]byte, error)) (int64, error) {
	var version int64
	missing := false
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		cur, data, err := currentBlock(ctx, tx, name)
		if err != nil {
			return err
		}
		if cur == 0 {
			missing = true
			return ErrNotFound
		}
		taken := func(n string) (bool, error) {
			v, _, err := currentBlock(ctx, tx, n)
			return v > 0, err
		}
		next, created, err := edit(data, taken)
		if err != nil {
			return err
		}
		if err := s.checkBlock(name, next); err != nil {
			return err
		}
		for n, d := range created {
			if err := s.checkBlock(n, d); err != nil {
				return err
			}
			switch v, _, err := currentBlock(ctx, tx, n); {
			case err != nil:
				return err
			case v > 0:
				return &ConflictError{Name: n, Current: v}
			}
			if err := putBlock(ctx, tx, n, d, 1); err != nil {
				return err
			}
		}
		version = cur + 1
		return putBlock(ctx, tx, name, next, version)
	})
	if missing {
		return 0, s.notFound(ctx, name)
	}
	if err != nil {
		return 0, err
	}
	return version, nil
}

// PutMany writes several blocks in one transaction: all of them or, on any
// error, none. Every block is checked as Put checks it first, and all faults
// are reported together. With replace false, blocks that already exist are
// left as they are and listed in skipped; with replace true they are
// overwritten (version + 1). Both lists are sorted.
func (s *Store) PutMany(ctx context.Context, blocks map[string][]byte, replace bool) (written, skipped []string, err error) {
	names := make([]string, 0, len(blocks))
	var errs []error
	for name, data := range blocks {
		names = append(names, name)
		if err := s.checkBlock(name, data); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
		return nil, nil, fmt.Errorf("no blocks written: %w", errors.Join(errs...))
	}
	sort.Strings(names)
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		written, skipped = nil, nil
		for _, name := range names {
			cur, _, err := currentBlock(ctx, tx, name)
			if err != nil {
				return err
			}
			if cur > 0 && !replace {
				skipped = append(skipped, name)
				continue
			}
			if err := putBlock(ctx, tx, name, blocks[name], cur+1); err != nil {
				return err
			}
			written = append(written, name)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("no blocks written: %w", err)
	}
	return written, skipped, nil
}

// currentBlock returns a block's version and content, 0 and nil if absent.
func currentBlock(ctx context.Context, tx *sql.Tx, name string) (int64, json.RawMessage, error) {
	var (
		v    int64
		data string
	)
	err := tx.QueryRowContext(ctx, `SELECT version, data FROM blocks WHERE name = ?`, name).Scan(&v, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("block %q: %w", name, err)
	}
	return v, json.RawMessage(data), nil
}

func putBlock(ctx context.Context, tx *sql.Tx, name string, data []byte, version int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO blocks (name, data, version, updated) VALUES (?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET data = excluded.data, version = excluded.version, updated = excluded.updated`,
		name, string(data), version, now())
	if err != nil {
		return fmt.Errorf("block %q: %w", name, err)
	}
	return nil
}

// Block returns one block. A missing block is an error wrapping ErrNotFound
// that lists the blocks that do exist.
func (s *Store) Block(ctx context.Context, name string) (Block, error) {
	var (
		b       = Block{Name: name}
		data    string
		updated string
	)
	err := s.db.QueryRowContext(ctx, `SELECT data, version, updated FROM blocks WHERE name = ?`, name).Scan(&data, &b.Version, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return Block{}, s.notFound(ctx, name)
	}
	if err != nil {
		return Block{}, fmt.Errorf("block %q: %w", name, err)
	}
	b.Data = json.RawMessage(data)
	if b.Updated, err = parseTime(updated); err != nil {
		return Block{}, fmt.Errorf("block %q: %w", name, err)
	}
	return b, nil
}

func (s *Store) notFound(ctx context.Context, name string) error {
	names, err := s.Names(ctx)
	if err != nil {
		return fmt.Errorf("block %q %w (and listing the blocks failed: %v)", name, ErrNotFound, err)
	}
	if len(names) == 0 {
		return fmt.Errorf("block %q %w: the store has no blocks yet", name, ErrNotFound)
	}
	return fmt.Errorf("block %q %w; blocks that exist: %s", name, ErrNotFound, strings.Join(names, ", "))
}

// Blocks returns every block, sorted by name.
func (s *Store) Blocks(ctx context.Context) ([]Block, error) {
	return sqldb.List(ctx, s.db.QueryContext, "listing blocks", func(r *sql.Rows) (Block, error) {
		var (
			b             Block
			data, updated string
		)
		if err := r.Scan(&b.Name, &data, &b.Version, &updated); err != nil {
			return b, err
		}
		b.Data = json.RawMessage(data)
		var err error
		if b.Updated, err = parseTime(updated); err != nil {
			return b, fmt.Errorf("block %q: %w", b.Name, err)
		}
		return b, nil
	}, `SELECT name, data, version, updated FROM blocks ORDER BY name`)
}

// Names returns every block name, sorted.
func (s *Store) Names(ctx context.Context) ([]string, error) {
	return sqldb.List(ctx, s.db.QueryContext, "listing block names", sqldb.Column[string], `SELECT name FROM blocks ORDER BY name`)
}

// Empty reports whether the store holds no blocks (a store to seed).
func (s *Store) Empty(ctx context.Context) (bool, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM blocks`).Scan(&n); err != nil {
		return false, fmt.Errorf("counting blocks: %w", err)
	}
	return n == 0, nil
}

// Delete removes a block if it is at version expect (AnyVersion: whatever
// its version). A missing block is an error wrapping ErrNotFound; a version
// mismatch is a *ConflictError.
func (s *Store) Delete(ctx context.Context, name string, expect int64) error {
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		cur, curData, err := currentBlock(ctx, tx, name)
		if err != nil {
			return err
		}
		if cur == 0 {
			return ErrNotFound
		}
		if expect != AnyVersion && cur != expect {
			return &ConflictError{Name: name, Expected: expect, Current: cur, Data: curData, deleting: true}
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM blocks WHERE name = ?`, name)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return s.notFound(ctx, name)
	}
	if err != nil && !errors.Is(err, ErrConflict) {
		return fmt.Errorf("deleting block %q: %w", name, err)
	}
	return err
}
