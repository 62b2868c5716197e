package memory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// state is a memory's replayed weight.
type state struct {
	seq        int64
	importance float64 // judged worth when written
	strength   float64 // importance plus every use, capped at 1
	weight     float64 // the spec's weight, settled up to mset
	touched    float64 // last access: written or used (unix seconds)
	mset       float64 // decay passes up to this time are in weight
	dirty      bool    // changed since it was read from the table
	pending    bool    // not in the table yet
}

// ingester reads lines into the index inside one transaction. It replays
// weights in one pass: a use strengthens one memory; a decay pass only
// advances the replayed decay time, and each memory's pending decay is
// applied when it is next touched or read (passes compose: the product of
// 0.5^(idle_i/h) over consecutive passes is 0.5^(total idle/h), and the
// floor commutes with it). A rebuild is therefore linear in the lines.
type ingester struct {
	tx   *sql.Tx
	opts Options
	// complete: states holds every row of the table (a rebuild), so a
	// missing id needs no query.
	complete bool
	decay    decayState
	seq      int64
	states   map[string]*state // a cache over the memories table, by id
	pinned   map[string]string // old reference → id, pinned by migrate memories
	seen     map[[32]byte]int  // lines without an id: identical ones per day so far
	rows     []pendingRow      // new memories, inserted with their final state at the end
	skipped  skippedLines      // malformed lines of the file being read
	terms    map[string]int    // memories per word, added to the terms table at the end
	goals    map[string]*goalMark

	insert, fts, alias, fileRow, byID, byAlias, update *sql.Stmt
}

// pendingRow is a new memory waiting to be inserted.
type pendingRow struct {
	st                 *state
	id, day            string
	offset             int64
	unix               float64
	author, step       string
	cost               float64
	model              string
	textHash           []byte
	line               []byte
	situation, descrip string
}

// skippedLines counts the malformed lines of one file, reported once.
type skippedLines struct {
	n      int
	offset int64 // the first one's
	err    error
	text   []byte
}

type goalMark struct {
	pursued    float64
	pursuedSeq int64
	touchedSeq int64
}

func newIngester(ctx context.Context, tx *sql.Tx, opts Options, pinned map[string]string, complete bool) (*ingester, error) {
	g := &ingester{tx: tx, opts: opts, complete: complete, states: map[string]*state{}, pinned: pinned, seen: map[[32]byte]int{},
		terms: map[string]int{}, goals: map[string]*goalMark{}}
	if g.pinned == nil {
		g.pinned = map[string]string{}
	}
	var err error
	if g.decay, err = readDecay(ctx, tx); err != nil {
		return nil, err
	}
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM memories`).Scan(&g.seq); err != nil {
		return nil, fmt.Errorf("memory index: %w", err)
	}
	prep := []struct {
		dst **sql.Stmt
		q   string
	}{
		{&g.insert, `INSERT INTO memories (seq, id, day, offset, unix, author, step, importance, strength, weight, touched, mset, cost, model, text_hash, line)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&g.fts, `INSERT INTO memories_fts (rowid, situation, description) VALUES (?, ?, ?)`},
		{&g.alias, `INSERT INTO aliases (alias, id, pinned) VALUES (?, ?, ?)
			ON CONFLICT (alias) DO UPDATE SET id = excluded.id, pinned = excluded.pinned WHERE excluded.pinned >= aliases.pinned`},
		{&g.fileRow, `INSERT OR REPLACE INTO files (day, indexed, sha256, hasher, tail, size, mtime, ctime, ino, checked) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&g.byID, `SELECT seq, importance, strength, weight, touched, mset FROM memories WHERE id = ?`},
		{&g.byAlias, `SELECT id FROM aliases WHERE alias = ?`},
		{&g.update, `UPDATE memories SET importance = ?, strength = ?, weight = ?, touched = ?, mset = ? WHERE seq = ?`},
	}
	for _, p := range prep {
		if *p.dst, err = tx.PrepareContext(ctx, p.q); err != nil {
			g.close()
			return nil, fmt.Errorf("memory index: %w", err)
		}
	}
	return g, nil
}

func (g *ingester) close() {
	for _, st := range []*sql.Stmt{g.insert, g.fts, g.alias, g.fileRow, g.byID, g.byAlias, g.update} {
		if st != nil {
			st.Close()
		}
	}
}

// file reads the complete lines of f from f.from on, then records what
// the index was built from.
func (g *ingester) file(ctx context.Context, f fileUpdate) error {
	lines, end := splitLines(f.data, f.from-f.base)
	g.skipped = skippedLines{}
	for _, l := range lines {
		l.offset += f.base
		if err := g.line(ctx, f.day, l); err != nil {
			return fmt.Errorf("memory index: %s@%d: %w", f.day, l.offset, err)
		}
	}
	if sk := g.skipped; sk.n > 0 {
		g.opts.Logger.Warn("memory: skipping malformed lines (a torn write, a hand edit)", "day", f.day, "lines", sk.n,
			"first_offset", sk.offset, "err", sk.err, "first", truncate(string(sk.text), 200))
	}
	return g.recordFile(ctx, f, f.base+end)
}

// recordFile records that the index holds f's bytes up to offset indexed:
// their hash (extending the hasher state f carries), the hasher state, the
// hash of their last tailWindow bytes, and the size and time seen.
func (g *ingester) recordFile(ctx context.Context, f fileUpdate, indexed int64) error {
	h := sha256.New()
	if f.hasher != nil {
		if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(f.hasher); err != nil {
			return fmt.Errorf("memory index: hasher state of %s: %w", f.day, err)
		}
	}
	h.Write(f.data[f.hashed-f.base : indexed-f.base])
	state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return err
	}
	tail := f.data[max(0, indexed-tailWindow)-f.base : indexed-f.base]
	_, err = g.fileRow.ExecContext(ctx, f.day, indexed, hex.EncodeToString(h.Sum(nil)), state, hashHex(tail), f.stat.Size, f.stat.Mtime, f.stat.Ctime, f.stat.Ino, time.Now().UnixNano())
	if err != nil {
		return fmt.Errorf("memory index: %w", err)
	}
	return nil
}

// load finds a memory's state by id: cached, or from the table.
func (g *ingester) load(ctx context.Context, id string) (*state, error) {
	if s, ok := g.states[id]; ok || g.complete {
		return s, nil
	}
	s := &state{}
	err := g.byID.QueryRowContext(ctx, id).Scan(&s.seq, &s.importance, &s.strength, &s.weight, &s.touched, &s.mset)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	g.states[id] = s
	return s, nil
}

// resolve turns a reference into the state of the memory it names: an id,
// or an old "DAY@OFFSET" reference through the pinned or live aliases.
func (g *ingester) resolve(ctx context.Context, ref string) (*state, error) {
	if LegacyRef(ref) {
		id, ok := g.pinned[ref]
		if !ok {
			err := g.byAlias.QueryRowContext(ctx, ref).Scan(&id)
			if errors.Is(err, sql.ErrNoRows) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
		}
		ref = id
	}
	return g.load(ctx, ref)
}

// settle applies the decay passes replayed so far to s.
func (g *ingester) settle(s *state) {
	w := g.decay.currentWeight(s.weight, s.touched, s.mset, g.opts.Floor)
	if w != s.weight || s.mset != g.decay.max {
		s.weight, s.mset, s.dirty = w, g.decay.max, true
	}
}

func (g *ingester) line(ctx context.Context, day string, l line) error {
	m, err := decode(l.text)
	if err != nil {
		if g.skipped.n == 0 {
			g.skipped = skippedLines{offset: l.offset, err: err, text: l.text}
		}
		g.skipped.n++
		return nil
	}
	id := m.ID
	legacy := id == ""
	if !legacy {
		if dup, err := g.load(ctx, id); err != nil {
			return err
		} else if dup != nil {
			g.opts.Logger.Warn("memory: a line repeats another's id; it is indexed under an id derived from its content", "id", id, "day", day, "offset", l.offset)
			legacy = true
		}
	}
	if legacy {
		if id, err = g.deriveID(ctx, m.Timestamp, day, l.text); err != nil {
			return err
		}
		pinned := 0
		if p, ok := g.pinned[legacyRef(day, l.offset)]; ok && p == id {
			pinned = 1
		}
		if _, err := g.alias.ExecContext(ctx, legacyRef(day, l.offset), id, pinned); err != nil {
			return err
		}
	}
	unix := float64(m.Timestamp.UnixNano()) / 1e9
	g.seq++
	s := &state{seq: g.seq, importance: m.Weight, strength: m.Weight, weight: m.Weight, touched: unix, mset: g.decay.max, pending: true}
	row := pendingRow{st: s, id: id, day: day, offset: l.offset, unix: unix, author: m.Author, step: m.Step,
		model: m.Model, line: l.text, situation: m.Situation, descrip: m.Description}
	if m.Usage != nil {
		row.cost = m.Usage.CostUSD
	}
	textHash := sha256.Sum256([]byte(m.Situation + "\n" + m.Description))
	row.textHash = textHash[:16]
	g.rows = append(g.rows, row)
	g.states[id] = s
	for _, w := range words(m.Situation+"\n"+m.Description, 0) {
		g.terms[w]++
	}
	for ref, v := range m.Judged {
		t, err := g.resolve(ctx, ref)
		if err != nil || t == nil {
			continue // a judgment of a memory this index does not hold
		}
		g.settle(t)
		delta := v - t.importance
		t.importance = v
		t.strength = clamp(t.strength+delta, 0, 1)
		t.weight = clamp(t.weight+delta, g.opts.Floor, 1)
		t.dirty = true
	}
	for _, ref := range m.Used {
		t, err := g.resolve(ctx, ref)
		if err != nil {
			return err
		}
		if t == nil {
			continue
		}
		g.settle(t)
		t.weight = math.Min(1, t.weight+g.opts.Strengthen)
		t.strength = math.Min(1, t.strength+g.opts.Strengthen)
		t.touched = math.Max(t.touched, unix)
		t.dirty = true
	}
	if m.Decay != nil {
		if err := g.pass(ctx, unix, m.Decay.HalfLifeHours*3600); err != nil {
			return err
		}
	}
	if m.Author == Kernel && m.Step == "migrate" {
		for ref, target := range migratedAliases(m) {
			g.pinned[ref] = target
			if _, err := g.alias.ExecContext(ctx, ref, target, 1); err != nil {
				return err
			}
		}
	}
	if len(m.Data) > 0 && bytes.Contains(m.Data, []byte(`"goal"`)) {
		var d struct {
			Goal string `json:"goal"`
		}
		if json.Unmarshal(m.Data, &d) == nil && strings.TrimSpace(d.Goal) != "" {
			key := strings.ToLower(strings.TrimSpace(d.Goal))
			mark := g.goals[key]
			if mark == nil {
				mark = &goalMark{}
				g.goals[key] = mark
			}
			mark.touchedSeq = s.seq
			if m.Author == Goal {
				mark.pursued, mark.pursuedSeq = math.Max(mark.pursued, unix), s.seq
			}
		}
	}
	return nil
}

// deriveID gives a line written without an id (or repeating another's)
// its id: a hash of its day and text, and how many identical lines came
// before it, so it does not depend on where in the file it sits.
func (g *ingester) deriveID(ctx context.Context, t time.Time, day string, text []byte) (string, error) {
	key := sha256.Sum256(append([]byte(day+"\x00"), text...))
	for {
		n := g.seen[key]
		g.seen[key] = n + 1
		id := legacyID(t, day, text, n)
		taken, err := g.load(ctx, id)
		if err != nil {
			return "", err
		}
		if taken == nil {
			return id, nil
		}
	}
}

// pass replays a decay pass at time t with half-life h seconds. Passes
// with one half-life compose; when it changes, every memory's decay so far
// is settled first.
func (g *ingester) pass(ctx context.Context, t, h float64) error {
	if g.decay.halfLife != 0 && h != g.decay.halfLife {
		if g.complete {
			for _, s := range g.states {
				g.settle(s)
			}
		} else {
			if err := g.flush(ctx); err != nil {
				return err
			}
			g.states = map[string]*state{}
			if err := g.settleAll(ctx); err != nil {
				return err
			}
		}
	}
	g.decay.halfLife = h
	g.decay.max = math.Max(g.decay.max, t)
	return nil
}

// settleAll applies the pending decay to every row, in SQL (a change of
// half-life: rare).
func (g *ingester) settleAll(ctx context.Context) error {
	d := g.decay
	f := strconv.FormatFloat
	ref := `max(touched, mset)`
	_, err := g.tx.ExecContext(ctx, `UPDATE memories SET weight = max(`+f(g.opts.Floor, 'g', -1, 64)+`, weight * pow(0.5, (`+
		f(d.max, 'g', -1, 64)+` - `+ref+`) / `+f(d.halfLife, 'g', -1, 64)+`)), mset = `+f(d.max, 'g', -1, 64)+`
		WHERE weight > `+f(g.opts.Floor, 'g', -1, 64)+` AND `+f(d.max, 'g', -1, 64)+` > `+ref)
	if err != nil {
		return err
	}
	_, err = g.tx.ExecContext(ctx, `UPDATE memories SET mset = ?`, d.max)
	return err
}

// flush writes the new memories and the changed states.
func (g *ingester) flush(ctx context.Context) error {
	for _, r := range g.rows {
		s := r.st
		if _, err := g.insert.ExecContext(ctx, s.seq, r.id, r.day, r.offset, r.unix, r.author, r.step,
			s.importance, s.strength, s.weight, s.touched, s.mset, r.cost, r.model, r.textHash, r.line); err != nil {
			return err
		}
		if _, err := g.fts.ExecContext(ctx, s.seq, r.situation, r.descrip); err != nil {
			return err
		}
		s.pending, s.dirty = false, false
	}
	g.rows = nil
	for _, s := range g.states {
		if !s.dirty {
			continue
		}
		if _, err := g.update.ExecContext(ctx, s.importance, s.strength, s.weight, s.touched, s.mset, s.seq); err != nil {
			return err
		}
		s.dirty = false
	}
	return nil
}

func (g *ingester) finish(ctx context.Context) error {
	if err := g.flush(ctx); err != nil {
		return fmt.Errorf("memory index: %w", err)
	}
	for w, n := range g.terms {
		if _, err := g.tx.ExecContext(ctx, `INSERT INTO terms (term, docs) VALUES (?, ?)
			ON CONFLICT (term) DO UPDATE SET docs = docs + excluded.docs`, w, n); err != nil {
			return fmt.Errorf("memory index: %w", err)
		}
	}
	for goal, m := range g.goals {
		if _, err := g.tx.ExecContext(ctx, `INSERT INTO goals (goal, pursued, pursued_seq, touched_seq) VALUES (?, ?, ?, ?)
			ON CONFLICT (goal) DO UPDATE SET pursued = max(pursued, excluded.pursued),
				pursued_seq = max(pursued_seq, excluded.pursued_seq), touched_seq = max(touched_seq, excluded.touched_seq)`,
			goal, m.pursued, m.pursuedSeq, m.touchedSeq); err != nil {
			return fmt.Errorf("memory index: %w", err)
		}
	}
	for key, v := range map[string]float64{"decay_max": g.decay.max, "decay_half_life": g.decay.halfLife} {
		if _, err := g.tx.ExecContext(ctx, `INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)`, key, strconv.FormatFloat(v, 'g', -1, 64)); err != nil {
			return fmt.Errorf("memory index: %w", err)
		}
	}
	return nil
}

func clamp(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }

// migratedAliases are the old references a migrate memory pins.
func migratedAliases(m Memory) map[string]string {
	if m.Author != Kernel || m.Step != "migrate" || len(m.Data) == 0 {
		return nil
	}
	var d struct {
		Aliases map[string]string `json:"aliases"`
	}
	if json.Unmarshal(m.Data, &d) != nil {
		return nil
	}
	return d.Aliases
}
