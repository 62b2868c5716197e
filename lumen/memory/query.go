package memory

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Filter selects memories. Zero fields select everything.
type Filter struct {
	Authors  []string // any of these authors
	Step     string   // written by this kernel step
	Day      string   // on this UTC day, YYYY-MM-DD
	AfterSeq int64    // indexed after this entry
	// DataKey and DataValue select memories whose data has this string
	// value at this key (e.g. "goal" = "learn Go").
	DataKey, DataValue string
	// Limit keeps the most recent Limit entries; 0 keeps all.
	Limit int
}

func (f Filter) where() (string, []any, error) {
	var conds []string
	var args []any
	if len(f.Authors) > 0 {
		marks := make([]string, len(f.Authors))
		for i, a := range f.Authors {
			if !ValidAuthor(a) {
				return "", nil, fmt.Errorf("memory author %q: use self, kernel, goal or external", a)
			}
			marks[i] = "?"
			args = append(args, a)
		}
		conds = append(conds, "author IN ("+strings.Join(marks, ",")+")")
	}
	if f.Step != "" {
		conds = append(conds, "step = ?")
		args = append(args, f.Step)
	}
	if f.Day != "" {
		conds = append(conds, "day = ?")
		args = append(args, f.Day)
	}
	if f.AfterSeq > 0 {
		conds = append(conds, "seq > ?")
		args = append(args, f.AfterSeq)
	}
	if f.DataKey != "" {
		conds = append(conds, "json_extract(line, ?) = ?")
		args = append(args, "$.data."+f.DataKey, f.DataValue)
	}
	if len(conds) == 0 {
		return "", nil, nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args, nil
}

// List returns the memories f selects, oldest first, after a Sync.
func (s *Store) List(ctx context.Context, f Filter) ([]Entry, error) {
	if err := s.Sync(ctx); err != nil {
		return nil, err
	}
	where, args, err := f.where()
	if err != nil {
		return nil, err
	}
	q := `SELECT seq, id, line, weight FROM memories` + where + ` ORDER BY seq`
	if f.Limit > 0 {
		q = `SELECT * FROM (SELECT seq, id, line, weight FROM memories` + where + ` ORDER BY seq DESC LIMIT ?) ORDER BY seq`
		args = append(args, f.Limit)
	}
	return s.query(ctx, q, args...)
}

// Count counts the memories f selects (Limit ignored), after a Sync.
func (s *Store) Count(ctx context.Context, f Filter) (int, error) {
	if err := s.Sync(ctx); err != nil {
		return 0, err
	}
	where, args, err := f.where()
	if err != nil {
		return 0, err
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM memories`+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("memory index: %w", err)
	}
	return n, nil
}

// CountByAuthor counts every memory by author.
func (s *Store) CountByAuthor(ctx context.Context) (map[string]int, error) {
	if err := s.Sync(ctx); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT author, count(*) FROM memories GROUP BY author`)
	if err != nil {
		return nil, fmt.Errorf("memory index: %w", err)
	}
	defer rows.Close()
	counts := map[string]int{Self: 0, Kernel: 0, Goal: 0, External: 0}
	for rows.Next() {
		var a string
		var n int
		if err := rows.Scan(&a, &n); err != nil {
			return nil, fmt.Errorf("memory index: %w", err)
		}
		counts[a] = n
	}
	return counts, rows.Err()
}

// Get returns the entries with these ids, in the order given; unknown ids
// are left out.
func (s *Store) Get(ctx context.Context, ids ...string) ([]Entry, error) {
	if err := s.Sync(ctx); err != nil {
		return nil, err
	}
	var out []Entry
	for _, id := range ids {
		es, err := s.query(ctx, `SELECT seq, id, line, weight FROM memories WHERE id = ?`, id)
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	return out, nil
}

func (s *Store) query(ctx context.Context, q string, args ...any) ([]Entry, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("memory index: %w", err)
	}
	defer rows.Close()
	return scanEntries(rows)
}

func scanEntries(rows *sql.Rows) ([]Entry, error) {
	var out []Entry
	for rows.Next() {
		var seq int64
		var id, text string
		var w float64
		if err := rows.Scan(&seq, &id, &text, &w); err != nil {
			return nil, fmt.Errorf("memory index: %w", err)
		}
		e, err := decodeEntry(seq, id, text, w)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memory index: %w", err)
	}
	return out, nil
}
