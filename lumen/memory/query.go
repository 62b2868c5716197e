package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/sqldb"
)

// Filter selects memories. Zero fields select everything.
type Filter struct {
	Authors   []string // any of these authors
	Step      string   // written by this kernel step
	Day       string   // on this UTC day, YYYY-MM-DD
	SinceDay  string   // on this UTC day or later
	BeforeDay string   // before this UTC day
	AfterSeq  int64    // indexed after this entry
	// DataKey and DataValue select memories whose data has this string
	// value at this key (e.g. "goal" = "learn Go").
	DataKey, DataValue string
	// DataHas selects memories whose data has this key.
	DataHas string
	// Limit keeps the most recent Limit entries (the oldest with
	// Oldest); 0 keeps all.
	Limit  int
	Oldest bool
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
	if f.SinceDay != "" {
		conds = append(conds, "day >= ?")
		args = append(args, f.SinceDay)
	}
	if f.BeforeDay != "" {
		conds = append(conds, "day < ?")
		args = append(args, f.BeforeDay)
	}
	if f.DataHas != "" {
		conds = append(conds, "json_extract(line, ?) IS NOT NULL")
		args = append(args, "$.data."+f.DataHas)
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

// entryColumns are what scanEntry reads, in order.
const entryColumns = `seq, id, day, offset, line, importance, strength, weight, touched, mset`

// List returns the memories f selects, oldest first, after a Sync.
func (s *Store) List(ctx context.Context, f Filter) ([]Entry, error) {
	return heal(s, func() ([]Entry, error) { return s.list(ctx, f) })
}

func (s *Store) list(ctx context.Context, f Filter) ([]Entry, error) {
	if err := s.Sync(ctx); err != nil {
		return nil, err
	}
	where, args, err := f.where()
	if err != nil {
		return nil, err
	}
	q := `SELECT ` + entryColumns + ` FROM memories` + where + ` ORDER BY seq`
	switch {
	case f.Limit > 0 && f.Oldest:
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	case f.Limit > 0:
		q = `SELECT * FROM (SELECT ` + entryColumns + ` FROM memories` + where + ` ORDER BY seq DESC LIMIT ?) ORDER BY seq`
		args = append(args, f.Limit)
	}
	return s.query(ctx, q, args...)
}

// Count counts the memories f selects (Limit ignored), after a Sync.
func (s *Store) Count(ctx context.Context, f Filter) (int, error) {
	return heal(s, func() (int, error) { return s.count(ctx, f) })
}

func (s *Store) count(ctx context.Context, f Filter) (int, error) {
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
	return heal(s, func() (map[string]int, error) { return s.countByAuthor(ctx) })
}

func (s *Store) countByAuthor(ctx context.Context) (map[string]int, error) {
	if err := s.Sync(ctx); err != nil {
		return nil, err
	}
	type authorCount struct {
		author string
		n      int
	}
	rows, err := sqldb.List(ctx, s.db.QueryContext, "memory index", func(r *sql.Rows) (authorCount, error) {
		var c authorCount
		return c, r.Scan(&c.author, &c.n)
	}, `SELECT author, count(*) FROM memories GROUP BY author`)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{Self: 0, Kernel: 0, Goal: 0, External: 0}
	for _, c := range rows {
		counts[c.author] = c.n
	}
	return counts, nil
}

// Get returns the entries with these ids, in the order given; unknown ids
// are left out. An old-style reference ("DAY@OFFSET", written before
// memories carried ids) finds the line it named.
func (s *Store) Get(ctx context.Context, ids ...string) ([]Entry, error) {
	return heal(s, func() ([]Entry, error) { return s.get(ctx, ids...) })
}

func (s *Store) get(ctx context.Context, ids ...string) ([]Entry, error) {
	if err := s.Sync(ctx); err != nil {
		return nil, err
	}
	var out []Entry
	for _, ref := range ids {
		id, err := s.resolve(ctx, ref)
		if err != nil {
			return nil, err
		}
		es, err := s.query(ctx, `SELECT `+entryColumns+` FROM memories WHERE id = ?`, id)
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	return out, nil
}

// resolve turns an old-style reference into the id it names.
func (s *Store) resolve(ctx context.Context, ref string) (string, error) {
	if !LegacyRef(ref) {
		return ref, nil
	}
	var id string
	err := s.db.QueryRowContext(ctx, `SELECT id FROM aliases WHERE alias = ?`, ref).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return ref, nil
	}
	if err != nil {
		return "", fmt.Errorf("memory index: %w", err)
	}
	return id, nil
}

// Spend is the LLM cost the memories of a UTC day record, in US dollars:
// every call is accounted on one line, so this holds across processes and
// restarts.
func (s *Store) Spend(ctx context.Context, day string) (float64, error) {
	return heal(s, func() (float64, error) { return s.spend(ctx, day) })
}

func (s *Store) spend(ctx context.Context, day string) (float64, error) {
	if err := s.Sync(ctx); err != nil {
		return 0, err
	}
	var v float64
	if err := s.db.QueryRowContext(ctx, `SELECT coalesce(sum(cost), 0) FROM memories WHERE day = ?`, day).Scan(&v); err != nil {
		return 0, fmt.Errorf("memory index: %w", err)
	}
	return v, nil
}

// ScriptedModels are the models (without their provider) of the memories
// of a UTC day that record scripted spend (Usage.ScriptedUSD): what that
// money was metered at.
func (s *Store) ScriptedModels(ctx context.Context, day string) ([]string, error) {
	return heal(s, func() ([]string, error) {
		if err := s.Sync(ctx); err != nil {
			return nil, err
		}
		return sqldb.List(ctx, s.db.QueryContext, "memory index", func(r *sql.Rows) (string, error) {
			var model string
			err := r.Scan(&model)
			_, name, found := strings.Cut(model, "/")
			if !found {
				name = model
			}
			return name, err
		}, `SELECT DISTINCT coalesce(json_extract(line, '$.model'), '') FROM memories
			WHERE day = ? AND json_valid(line) AND json_extract(line, '$.usage.scripted_usd') > 0 ORDER BY 1`, day)
	})
}

// DayUsage is what the LLM calls the memories of a UTC day record add
// up to: calls, tokens (cache reads and writes included) and cost.
func (s *Store) DayUsage(ctx context.Context, day string) (Usage, error) {
	return heal(s, func() (Usage, error) { return s.dayUsage(ctx, day) })
}

func (s *Store) dayUsage(ctx context.Context, day string) (Usage, error) {
	if err := s.Sync(ctx); err != nil {
		return Usage{}, err
	}
	var u Usage
	err := s.db.QueryRowContext(ctx, `SELECT coalesce(sum(json_extract(line, '$.usage.calls')), 0),
		coalesce(sum(json_extract(line, '$.usage.input_tokens')), 0), coalesce(sum(json_extract(line, '$.usage.output_tokens')), 0),
		coalesce(sum(json_extract(line, '$.usage.cache_read_tokens')), 0), coalesce(sum(json_extract(line, '$.usage.cache_write_tokens')), 0),
		coalesce(sum(cost), 0), coalesce(sum(json_extract(line, '$.usage.scripted_usd')), 0)
		FROM memories WHERE day = ? AND json_valid(line) AND json_type(line, '$.usage') = 'object'`, day).
		Scan(&u.Calls, &u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens, &u.CostUSD, &u.ScriptedUSD)
	if err != nil {
		return Usage{}, fmt.Errorf("memory index: %w", err)
	}
	return u, nil
}

// GoalMark is what the memory says of one goal.
type GoalMark struct {
	// Pursued is when a goal memory last named it (zero if never).
	Pursued time.Time
	// PursuedSeq and TouchedSeq are the last goal memory, and the last
	// memory of any author, whose data names it (0 if none).
	PursuedSeq, TouchedSeq int64
}

// GoalMarks maps each goal named in memory data (lower-cased) to its marks.
func (s *Store) GoalMarks(ctx context.Context) (map[string]GoalMark, error) {
	return heal(s, func() (map[string]GoalMark, error) { return s.goalMarks(ctx) })
}

func (s *Store) goalMarks(ctx context.Context) (map[string]GoalMark, error) {
	if err := s.Sync(ctx); err != nil {
		return nil, err
	}
	type goalMark struct {
		goal string
		GoalMark
	}
	marks, err := sqldb.List(ctx, s.db.QueryContext, "memory index", func(r *sql.Rows) (goalMark, error) {
		var m goalMark
		var pursued float64
		err := r.Scan(&m.goal, &pursued, &m.PursuedSeq, &m.TouchedSeq)
		m.Pursued = unixTime(pursued)
		return m, err
	}, `SELECT goal, pursued, pursued_seq, touched_seq FROM goals`)
	if err != nil {
		return nil, err
	}
	out := make(map[string]GoalMark, len(marks))
	for _, m := range marks {
		out[m.goal] = m.GoalMark
	}
	return out, nil
}

// LegacyDays lists the day files holding lines written without an id
// whose old references no migrate memory has pinned yet, with those
// references and the ids they name.
func (s *Store) LegacyDays(ctx context.Context) (map[string]map[string]string, error) {
	return heal(s, func() (map[string]map[string]string, error) { return s.legacyDays(ctx) })
}

func (s *Store) legacyDays(ctx context.Context) (map[string]map[string]string, error) {
	if err := s.Sync(ctx); err != nil {
		return nil, err
	}
	aliases, err := sqldb.List(ctx, s.db.QueryContext, "memory index", func(r *sql.Rows) ([2]string, error) {
		var a [2]string // the reference, the id it names
		return a, r.Scan(&a[0], &a[1])
	}, `SELECT alias, id FROM aliases WHERE pinned = 0`)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	for _, a := range aliases {
		day, _, _ := strings.Cut(a[0], "@")
		if out[day] == nil {
			out[day] = map[string]string{}
		}
		out[day][a[0]] = a[1]
	}
	return out, nil
}

func (s *Store) query(ctx context.Context, q string, args ...any) ([]Entry, error) {
	return sqldb.List(ctx, s.db.QueryContext, "memory index", func(r *sql.Rows) (Entry, error) { return s.scanEntry(r) }, q, args...)
}

// scanEntry reads the entryColumns of one row (then extra), for a list
// whose errors say "memory index".
func (s *Store) scanEntry(row *sql.Rows, extra ...any) (Entry, error) {
	var e Entry
	var text string
	var weight, touched, mset float64
	dest := append([]any{&e.Seq, &e.ID, &e.Day, &e.Offset, &text, &e.Importance, &e.Strength, &weight, &touched, &mset}, extra...)
	if err := row.Scan(dest...); err != nil {
		return e, err
	}
	if err := json.Unmarshal([]byte(text), &e.Memory); err != nil {
		return e, fmt.Errorf("%s: %w", e.ID, err)
	}
	e.Current = s.decay.currentWeight(weight, touched, mset, s.opts.Floor)
	e.LastAccess = unixTime(touched)
	return e, nil
}
