package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/sqldb"
	"github.com/llmkernels/kernels/internal/sqlite"
)

// What the kernel keeps to run its wake triggers (package hermitcrab,
// wake.go): each trigger's next due time, every wake with what it cost,
// the messages received from beaches, and the webhook posts waiting for
// their wake. Times are given by the caller (the kernel's clock), so a
// test clock governs them.

// Wake statuses.
const (
	WakeRunning     = "running"     // claimed; the call is under way
	WakeDone        = "woke"        // the call ended
	WakeFailed      = "failed"      // the call failed
	WakeSkipped     = "skipped"     // not run: a daily cap
	WakeInterrupted = "interrupted" // the process ended during the call
)

// TriggerState is what is kept of one trigger between runs.
type TriggerState struct {
	Key     string    `json:"key"`
	NextDue time.Time `json:"next_due"`        // zero: not on the clock
	Seen    string    `json:"seen,omitempty"`  // a watched page's hash
	Error   string    `json:"error,omitempty"` // the last poll or fetch that failed
}

// Wake is one time a trigger fired, or would have.
type Wake struct {
	ID      int64     `json:"id"`
	Trigger string    `json:"trigger"` // the trigger's key
	Where   string    `json:"where"`   // "wake 0.4.1" when it fired
	Due     string    `json:"due"`     // the due time or events it fired for
	At      time.Time `json:"at"`
	Day     string    `json:"day"` // the local date the daily caps count it in
	Tier    int       `json:"tier"`
	Status  string    `json:"status"`
	Reason  string    `json:"reason"` // why it fired, or why it was skipped
	Reply   string    `json:"reply"`  // "" (null in JSON) while it has none: skipped, running
	CostUSD float64   `json:"cost_usd"`
	// ScriptedUSD is CostUSD when a scripted provider answered the wake
	// (llm.Client.Scripted): what the model would charge, nothing charged.
	ScriptedUSD float64   `json:"scripted_usd,omitempty"`
	Finished    time.Time `json:"finished"` // zero (null in JSON) until it ended
}

// MarshalJSON writes every field, whatever the status, as
// docs/configuration.md lists them: reply and finished are null on a wake
// that has none yet (skipped, running).
func (w Wake) MarshalJSON() ([]byte, error) {
	type plain Wake
	out := struct {
		plain
		Reply    *string    `json:"reply"`
		Finished *time.Time `json:"finished"`
	}{plain: plain(w)}
	if w.Reply != "" {
		out.Reply = &w.Reply
	}
	if !w.Finished.IsZero() {
		out.Finished = &w.Finished
	}
	return json.Marshal(out)
}

// countedStatuses are the wakes the daily caps count: all but the skipped.
const countedStatuses = `('running', 'woke', 'failed', 'interrupted')`

// KeepsWakes reports whether the file has the wake tables: a file from
// before them, opened read-only, is read as it is (no trigger has run).
func (s *Store) KeepsWakes(ctx context.Context) (bool, error) {
	tables, err := sqlite.Tables(ctx, s.db)
	if err != nil {
		return false, fmt.Errorf("listing tables: %w", err)
	}
	return tables["wakes"] && tables["triggers"], nil
}

// TriggerStates returns every trigger's state, by key.
func (s *Store) TriggerStates(ctx context.Context) (map[string]TriggerState, error) {
	states, err := sqldb.List(ctx, s.db.QueryContext, "trigger states", func(r *sql.Rows) (TriggerState, error) { return scanTriggerState(r) }, `SELECT key, next_due, seen, error FROM triggers`)
	if err != nil {
		return nil, err
	}
	out := make(map[string]TriggerState, len(states))
	for _, st := range states {
		out[st.Key] = st
	}
	return out, nil
}

// scanTriggerState reads a row of key, next_due, seen and error.
func scanTriggerState(row interface{ Scan(...any) error }) (TriggerState, error) {
	var st TriggerState
	var due string
	if err := row.Scan(&st.Key, &due, &st.Seen, &st.Error); err != nil || due == "" {
		return st, err
	}
	var err error
	st.NextDue, err = parseTime(due)
	return st, err
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeFormat)
}

// PruneTriggers removes the state of every trigger whose key is not in
// keep (its line was edited away or rewritten): the table stays as small
// as the wake block, and a trigger written again starts afresh. It
// returns how many it removed.
func (s *Store) PruneTriggers(ctx context.Context, keep []string) (int64, error) {
	var n int64
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		q, args := `DELETE FROM triggers`, make([]any, len(keep))
		if len(keep) > 0 {
			q += ` WHERE key NOT IN (?` + strings.Repeat(`, ?`, len(keep)-1) + `)`
			for i, k := range keep {
				args[i] = k
			}
		}
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("pruning trigger states: %w", err)
	}
	return n, nil
}

// InitTrigger records a trigger seen for the first time, due at next; a
// trigger already recorded (by this process or another) keeps its state.
// It returns the state now stored.
func (s *Store) InitTrigger(ctx context.Context, key string, next time.Time, at time.Time) (TriggerState, error) {
	var st TriggerState
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO triggers (key, next_due, seen, error, updated) VALUES (?, ?, '', '', ?) ON CONFLICT (key) DO NOTHING`,
			key, stamp(next), stamp(at)); err != nil {
			return err
		}
		var err error
		st, err = scanTriggerState(tx.QueryRowContext(ctx, `SELECT key, next_due, seen, error FROM triggers WHERE key = ?`, key))
		return err
	})
	if err != nil {
		return st, fmt.Errorf("trigger %q: %w", key, err)
	}
	return st, nil
}

// AdvanceTrigger moves a trigger's next due time from what the caller
// read to next, and reports whether it did: false when another process
// moved it first (it has that due time, and fires it).
func (s *Store) AdvanceTrigger(ctx context.Context, key string, from, next, at time.Time) (bool, error) {
	var moved bool
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		var err error
		moved, err = advance(ctx, tx, key, from, next, at)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("trigger %q: %w", key, err)
	}
	return moved, nil
}

func advance(ctx context.Context, tx *sql.Tx, key string, from, next, at time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE triggers SET next_due = ?, updated = ? WHERE key = ? AND next_due = ?`, stamp(next), stamp(at), key, stamp(from))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// SetTriggerSeen records what a trigger last saw (a watched page's hash)
// and the error of its last poll or fetch ("" when it worked).
func (s *Store) SetTriggerSeen(ctx context.Context, key, seen, errText string, at time.Time) error {
	return s.db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE triggers SET seen = ?, error = ?, updated = ? WHERE key = ?`, seen, errText, stamp(at), key)
		if err != nil {
			return fmt.Errorf("trigger %q: %w", key, err)
		}
		return nil
	})
}

// SetTriggerError records the error of a trigger's last poll or fetch.
func (s *Store) SetTriggerError(ctx context.Context, key, errText string, at time.Time) error {
	return s.db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE triggers SET error = ?, updated = ? WHERE key = ?`, errText, stamp(at), key)
		if err != nil {
			return fmt.Errorf("trigger %q: %w", key, err)
		}
		return nil
	})
}

// WakeClaim is a trigger about to fire.
type WakeClaim struct {
	Trigger, Where, Due, Day, Reason string
	At                               time.Time
	Tier                             int
	// MaxWakes and MaxCostUSD are the daily caps (0: none). A wake that
	// would pass them is recorded as skipped, with the cap as its reason.
	MaxWakes   int
	MaxCostUSD float64
	// Estimate is what the wake may be expected to cost.
	Estimate float64
	// ShareWakes and ShareCostUSD, when above 0, cap this trigger's own
	// wakes of the day and their cost (the inbox's share of the caps, so
	// messages anyone can send do not spend the whole day).
	ShareWakes   int
	ShareCostUSD float64
	// From and Next, when Next is set, move the trigger's next due time
	// in the same transaction (AdvanceTrigger): the claim fails when
	// another process moved it first.
	From, Next time.Time
	// Received and Events are the messages and webhook posts the wake
	// delivers; the claim fails when another took one of them first.
	Received, Events []int64
}

// ClaimWake records that a trigger fires for a due time, once: in one
// transaction it checks that no wake was recorded for this trigger and due
// time (by this process or another sharing the file), checks the daily
// caps, records the wake (running, or skipped at a cap), and takes the
// messages and posts it delivers. ok is false when the claim was another
// process's, or the due time's wake is recorded already (a clock set
// back): nothing is then recorded, but in the second case the trigger's
// next due time still moves on.
func (s *Store) ClaimWake(ctx context.Context, c WakeClaim) (w Wake, ok bool, err error) {
	w = Wake{Trigger: c.Trigger, Where: c.Where, Due: c.Due, At: c.At, Day: c.Day, Tier: c.Tier, Status: WakeRunning, Reason: c.Reason}
	errTaken := errors.New("taken by another process")
	fired := false
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		fired = false
		if !c.Next.IsZero() {
			moved, err := advance(ctx, tx, c.Trigger, c.From, c.Next, c.At)
			if err != nil {
				return err
			}
			if !moved {
				return errTaken
			}
		}
		var count int
		var spent float64
		if err := tx.QueryRowContext(ctx, `SELECT count(*), COALESCE(sum(cost), 0) FROM wakes WHERE day = ? AND status IN `+countedStatuses, c.Day).Scan(&count, &spent); err != nil {
			return err
		}
		var own int
		var ownSpent float64
		if err := tx.QueryRowContext(ctx, `SELECT count(*), COALESCE(sum(cost), 0) FROM wakes WHERE day = ? AND trigger = ? AND status IN `+countedStatuses, c.Day, c.Trigger).Scan(&own, &ownSpent); err != nil {
			return err
		}
		switch {
		case c.ShareWakes > 0 && own+1 > c.ShareWakes:
			w.Status = WakeSkipped
			w.Reason = fmt.Sprintf("skipped: this trigger's share of the daily caps, %d wakes, is reached (%d today); %s", c.ShareWakes, own, c.Reason)
		case c.ShareCostUSD > 0 && ownSpent+c.Estimate > c.ShareCostUSD:
			w.Status = WakeSkipped
			w.Reason = fmt.Sprintf("skipped: this trigger's share of the daily caps, $%.2f, would be passed ($%.4f spent by it today, a wake like this costs about $%.4f); %s", c.ShareCostUSD, ownSpent, c.Estimate, c.Reason)
		case c.MaxWakes > 0 && count+1 > c.MaxWakes:
			w.Status = WakeSkipped
			w.Reason = fmt.Sprintf("skipped: the daily cap of %d wakes is reached (%d today); %s", c.MaxWakes, count, c.Reason)
		case c.MaxCostUSD > 0 && spent+c.Estimate > c.MaxCostUSD:
			w.Status = WakeSkipped
			w.Reason = fmt.Sprintf("skipped: the daily cap of $%.2f would be passed ($%.4f spent today, a wake like this costs about $%.4f); %s", c.MaxCostUSD, spent, c.Estimate, c.Reason)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO wakes (trigger, place, due, at, day, tier, status, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (trigger, due) DO NOTHING`, w.Trigger, w.Where, w.Due, stamp(w.At), w.Day, w.Tier, w.Status, w.Reason)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 && !c.Next.IsZero() {
			// The due time fired before (the clock was set back past it):
			// the trigger moves on past it, with no second wake.
			fired = true
			return nil
		} else if n == 0 {
			return errTaken
		}
		if w.ID, err = res.LastInsertId(); err != nil {
			return err
		}
		if w.Status == WakeSkipped {
			return nil
		}
		for table, ids := range map[string][]int64{"received": c.Received, "events": c.Events} {
			if err := deliver(ctx, tx, table, ids, w.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if fired || errors.Is(err, errTaken) || errors.Is(err, errDelivered) {
		return Wake{}, false, nil
	}
	if err != nil {
		return Wake{}, false, fmt.Errorf("claiming a wake of %q: %w", c.Trigger, err)
	}
	return w, true, nil
}

var errDelivered = errors.New("already delivered")

// deliver marks messages or posts delivered by wake, failing with
// errDelivered when one of them already was.
func deliver(ctx context.Context, tx *sql.Tx, table string, ids []int64, wake int64) error {
	for _, id := range ids {
		res, err := tx.ExecContext(ctx, `UPDATE `+table+` SET wake = ? WHERE id = ? AND wake IS NULL`, wake, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return errDelivered
		}
	}
	return nil
}

// WakeEnd is how a wake ended.
type WakeEnd struct {
	Status string // WakeDone, WakeFailed, or WakeSkipped (its first request did not fit a cap)
	Reply  string // a summary of the reply, or the error
	// Reason, when set, replaces the wake's reason (a wake skipped once
	// running says why).
	Reason  string
	CostUSD float64
	// Scripted: a scripted provider answered, so CostUSD is what the model
	// would charge and nothing was charged.
	Scripted bool
	At       time.Time
	// GiveBack: the model never answered the wake, so the messages and
	// posts it carried were never seen; they wait for the next wake.
	GiveBack bool
}

// FinishWake records how a wake ended. A wake that gives back what it
// carried (end.GiveBack) releases its messages and posts in the same
// transaction; a failed one also frees its due (giveBack), so the next
// wake may carry the same again, while a skipped one keeps it: the same
// messages or posts are not tried again that day, until more arrive.
func (s *Store) FinishWake(ctx context.Context, id int64, end WakeEnd) error {
	return s.db.Write(ctx, func(tx *sql.Tx) error {
		if end.GiveBack {
			if _, err := giveBack(ctx, tx, id, end.Status != WakeSkipped); err != nil {
				return fmt.Errorf("wake %d: %w", id, err)
			}
		}
		_, err := tx.ExecContext(ctx, `UPDATE wakes SET status = ?, reply = ?, cost = ?, scripted = ?, finished = ?, reason = CASE WHEN ? = '' THEN reason ELSE ? END WHERE id = ?`,
			end.Status, end.Reply, end.CostUSD, end.Scripted, stamp(end.At), end.Reason, end.Reason, id)
		if err != nil {
			return fmt.Errorf("wake %d: %w", id, err)
		}
		return nil
	})
}

// giveBack releases the messages and posts wake carried, to be delivered
// by the next wake, and returns how many. With free (and something
// released), the wake's due gets " (given back by wake ID)", unique, so a
// wake carrying the same ones again is not taken for this one.
func giveBack(ctx context.Context, tx *sql.Tx, wake int64, free bool) (int64, error) {
	var released int64
	for _, table := range []string{"received", "events"} {
		res, err := tx.ExecContext(ctx, `UPDATE `+table+` SET wake = NULL WHERE wake = ?`, wake)
		if err != nil {
			return 0, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, err
		}
		released += n
	}
	if released > 0 && free {
		if _, err := tx.ExecContext(ctx, `UPDATE wakes SET due = due || ' (given back by wake ' || id || ')' WHERE id = ?`, wake); err != nil {
			return 0, err
		}
	}
	return released, nil
}

// WakeRecorded reports whether a wake (of any status) is recorded for a
// trigger and due time.
func (s *Store) WakeRecorded(ctx context.Context, trigger, due string) (bool, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM wakes WHERE trigger = ? AND due = ?`, trigger, due).Scan(&n); err != nil {
		return false, fmt.Errorf("wakes of %q: %w", trigger, err)
	}
	return n > 0, nil
}

// WakeAnswered records that a running wake got an answer from the model
// and what it has spent so far: a process killed during the wake leaves
// its spending counted against the day's cap, and what the wake carried
// delivered (the model saw it). scripted: a scripted provider answered
// (WakeEnd.Scripted).
func (s *Store) WakeAnswered(ctx context.Context, id int64, cost float64, scripted bool) error {
	return s.db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE wakes SET cost = ?, scripted = ?, answered = 1 WHERE id = ? AND status = ?`, cost, scripted, id, WakeRunning)
		if err != nil {
			return fmt.Errorf("wake %d: %w", id, err)
		}
		return nil
	})
}

// InterruptWakes marks as interrupted every wake still running: the
// caller knows their process ended during the call (it holds the wake
// lock that a running wake's process holds). The messages and posts of
// one the model never answered are given back (giveBack), to be delivered
// by the next wake; one it answered keeps them, delivered.
func (s *Store) InterruptWakes(ctx context.Context, at time.Time) (int64, error) {
	var n int64
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		n = 0
		type running struct {
			id       int64
			answered bool
		}
		wakes, err := sqldb.List(ctx, tx.QueryContext, "running wakes", func(r *sql.Rows) (running, error) {
			var w running
			return w, r.Scan(&w.id, &w.answered)
		}, `SELECT id, answered FROM wakes WHERE status = ?`, WakeRunning)
		if err != nil {
			return err
		}
		for _, w := range wakes {
			reply := "the process ended during this wake (killed or crashed)"
			if !w.answered {
				released, err := giveBack(ctx, tx, w.id, true)
				if err != nil {
					return err
				}
				if released > 0 {
					reply += fmt.Sprintf(" before the model answered; its %d message(s) or post(s) are delivered again by the next wake", released)
				}
			}
			if _, err := tx.ExecContext(ctx, `UPDATE wakes SET status = ?, reply = ?, finished = ? WHERE id = ?`,
				WakeInterrupted, reply, stamp(at), w.id); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("interrupted wakes: %w", err)
	}
	return n, nil
}

// DayTotals counts the wakes of a day that the caps count, and their
// cost: of every trigger, or of one when trigger is not "".
func (s *Store) DayTotals(ctx context.Context, day, trigger string) (int, float64, error) {
	var n int
	var cost float64
	err := s.db.QueryRowContext(ctx, `SELECT count(*), COALESCE(sum(cost), 0) FROM wakes WHERE day = ? AND (? = '' OR trigger = ?) AND status IN `+countedStatuses,
		day, trigger, trigger).Scan(&n, &cost)
	if err != nil {
		return 0, 0, fmt.Errorf("wakes of %s: %w", day, err)
	}
	return n, cost, nil
}

// FailedInARow counts a trigger's latest wakes that failed one after
// another (skipped ones aside), up to limit, and says when the last
// ended.
func (s *Store) FailedInARow(ctx context.Context, trigger string, limit int) (int, time.Time, error) {
	// The list ends at the first wake that did not fail (Enough).
	failed, err := sqldb.List(ctx, s.db.QueryContext, fmt.Sprintf("wakes of %q", trigger), func(r *sql.Rows) ([2]string, error) {
		var w [2]string // status, finished
		if err := r.Scan(&w[0], &w[1]); err != nil || w[0] == WakeFailed {
			return w, err
		}
		return w, sqldb.Enough
	}, `SELECT status, finished FROM wakes WHERE trigger = ? AND status != ? ORDER BY id DESC LIMIT ?`, trigger, WakeSkipped, limit)
	if err != nil {
		return 0, time.Time{}, err
	}
	n, last := 0, time.Time{}
	for _, w := range failed {
		if w[0] != WakeFailed {
			break
		}
		if n == 0 && w[1] != "" {
			if last, err = parseTime(w[1]); err != nil {
				return 0, time.Time{}, err
			}
		}
		n++
	}
	return n, last, nil
}

// CostEstimate is what a wake at tier may be expected to cost: the most
// any of the last 20 finished wakes at that tier cost, 0 with none yet.
func (s *Store) CostEstimate(ctx context.Context, tier int) (float64, error) {
	var cost float64
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(max(cost), 0) FROM (SELECT cost FROM wakes WHERE tier = ? AND status IN ('woke', 'failed') ORDER BY id DESC LIMIT 20)`, tier).Scan(&cost)
	if err != nil {
		return 0, fmt.Errorf("wake costs: %w", err)
	}
	return cost, nil
}

// Wakes returns the wakes with ids above after, newest first, at most
// limit (≤ 0: 100).
func (s *Store) Wakes(ctx context.Context, after int64, limit int) ([]Wake, error) {
	if limit <= 0 {
		limit = 100
	}
	// A file from before step 4, opened read-only, has no scripted
	// column: none of its wakes was marked scripted.
	scripted := "0"
	var has int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('wakes') WHERE name = 'scripted'`).Scan(&has); err != nil {
		return nil, fmt.Errorf("listing wakes: %w", err)
	}
	if has > 0 {
		scripted = "scripted"
	}
	out, err := sqldb.List(ctx, s.db.QueryContext, "listing wakes", func(r *sql.Rows) (Wake, error) {
		var w Wake
		var at, finished string
		var isScripted bool
		err := r.Scan(&w.ID, &w.Trigger, &w.Where, &w.Due, &at, &w.Day, &w.Tier, &w.Status, &w.Reason, &w.Reply, &w.CostUSD, &isScripted, &finished)
		if isScripted {
			w.ScriptedUSD = w.CostUSD
		}
		if err == nil {
			w.At, err = parseTime(at)
		}
		if err == nil && finished != "" {
			w.Finished, err = parseTime(finished)
		}
		return w, err
	}, `SELECT id, trigger, place, due, at, day, tier, status, reason, reply, cost, `+scripted+`, finished FROM wakes WHERE id > ? ORDER BY id DESC LIMIT ?`, after, limit)
	if out == nil && err == nil {
		out = []Wake{} // a JSON list, never null
	}
	return out, err
}

// Received is a message an instance received from a beach and verified.
type Received struct {
	ID       int64           `json:"id"` // this instance's number for it
	Beach    string          `json:"beach"`
	BeachID  int64           `json:"beach_id"`
	Sender   string          `json:"sender"`
	Nonce    string          `json:"nonce"`
	Signed   time.Time       `json:"signed"`
	Received time.Time       `json:"received"`
	Message  json.RawMessage `json:"message"`  // the verified body
	Envelope json.RawMessage `json:"envelope"` // as signed
	// Wake is the wake that delivered it to the LLM: 0 when inbox_check
	// did, -1 when not yet delivered.
	Wake int64 `json:"wake"`
}

// AddReceived stores verified messages; one whose sender and nonce are
// stored already is a replay, returned in replays and not stored again.
func (s *Store) AddReceived(ctx context.Context, msgs []Received) (added, replays []Received, err error) {
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		added, replays = nil, nil
		for _, m := range msgs {
			res, err := tx.ExecContext(ctx, `INSERT INTO received (beach, beach_id, sender, nonce, signed, received, message, envelope) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (sender, nonce) DO NOTHING`, m.Beach, m.BeachID, m.Sender, m.Nonce, stamp(m.Signed), stamp(m.Received), string(m.Message), string(m.Envelope))
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			if n == 0 {
				replays = append(replays, m)
				continue
			}
			if m.ID, err = res.LastInsertId(); err != nil {
				return err
			}
			m.Wake = -1
			added = append(added, m)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("storing received messages: %w", err)
	}
	return added, replays, nil
}

// KnownMessage reports whether a message of sender with nonce is stored.
func (s *Store) KnownMessage(ctx context.Context, sender, nonce string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM received WHERE sender = ? AND nonce = ?`, sender, nonce).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("received messages: %w", err)
	}
	return n > 0, nil
}

// CountWaiting counts the received messages not yet delivered to the
// LLM (by a wake or inbox_check).
func (s *Store) CountWaiting(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM received WHERE wake IS NULL`).Scan(&n); err != nil {
		return 0, fmt.Errorf("waiting messages: %w", err)
	}
	return n, nil
}

// LastBeachID is the highest id a beach gave a message stored from it, 0
// when none is.
func (s *Store) LastBeachID(ctx context.Context, beach string) (int64, error) {
	var id int64
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(max(beach_id), 0) FROM received WHERE beach = ?`, beach).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("received messages: %w", err)
	}
	return id, nil
}

// ReceivedMessages returns stored messages, oldest first: the first limit
// undelivered ones when pending, else the newest limit.
func (s *Store) ReceivedMessages(ctx context.Context, pending bool, limit int) ([]Received, error) {
	// The oldest undelivered first, so a backlog is delivered in order; of
	// all, the newest.
	q := `SELECT ` + receivedColumns + ` FROM (SELECT * FROM received ORDER BY id DESC LIMIT ?) ORDER BY id`
	if pending {
		q = `SELECT ` + receivedColumns + ` FROM received WHERE wake IS NULL ORDER BY id LIMIT ?`
	}
	if limit <= 0 {
		limit = 100
	}
	return sqldb.List(ctx, s.db.QueryContext, "received messages", func(r *sql.Rows) (Received, error) { return scanReceived(r) }, q, limit)
}

// ReceivedMessage returns one stored message by this instance's id.
func (s *Store) ReceivedMessage(ctx context.Context, id int64) (Received, error) {
	m, err := scanReceived(s.db.QueryRowContext(ctx, `SELECT `+receivedColumns+` FROM received WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return m, fmt.Errorf("message %d %w: inbox_check lists the messages received", id, ErrNotFound)
	}
	if err != nil {
		return m, fmt.Errorf("message %d: %w", id, err)
	}
	return m, nil
}

// receivedColumns are what scanReceived reads, in its order.
const receivedColumns = `id, beach, beach_id, sender, nonce, signed, received, message, envelope, COALESCE(wake, -1)`

// scanReceived reads one row of receivedColumns.
func scanReceived(row interface{ Scan(...any) error }) (Received, error) {
	var m Received
	var signed, received, msg, env string
	if err := row.Scan(&m.ID, &m.Beach, &m.BeachID, &m.Sender, &m.Nonce, &signed, &received, &msg, &env, &m.Wake); err != nil {
		return m, err
	}
	var err error
	if m.Signed, err = parseTime(signed); err != nil {
		return m, err
	}
	if m.Received, err = parseTime(received); err != nil {
		return m, err
	}
	m.Message, m.Envelope = json.RawMessage(msg), json.RawMessage(env)
	return m, nil
}

// MarkDelivered records that the LLM saw these messages outside a wake
// (inbox_check); ones a wake delivered keep their wake.
func (s *Store) MarkDelivered(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	return s.db.Write(ctx, func(tx *sql.Tx) error {
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `UPDATE received SET wake = 0 WHERE id = ? AND wake IS NULL`, id); err != nil {
				return fmt.Errorf("message %d: %w", id, err)
			}
		}
		return nil
	})
}

// Event is a webhook post waiting for (or delivered by) its wake.
type Event struct {
	ID   int64     `json:"id"`
	Hook string    `json:"hook"`
	At   time.Time `json:"at"`
	Body string    `json:"body"`
}

// AddEvent stores a webhook post. A hook holds at most maxPending
// undelivered posts: the oldest beyond that are dropped (a flood costs at
// most maxPending rows and one wake), and dropped says how many.
// Delivered posts beyond the last 1,000 are forgotten.
func (s *Store) AddEvent(ctx context.Context, hook, body string, at time.Time, maxPending int) (id int64, dropped int64, err error) {
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO events (hook, at, body) VALUES (?, ?, ?)`, hook, stamp(at), body)
		if err != nil {
			return err
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		res, err = tx.ExecContext(ctx, `DELETE FROM events WHERE hook = ? AND wake IS NULL AND id NOT IN
			(SELECT id FROM events WHERE hook = ? AND wake IS NULL ORDER BY id DESC LIMIT ?)`, hook, hook, maxPending)
		if err != nil {
			return err
		}
		if dropped, err = res.RowsAffected(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM events WHERE wake IS NOT NULL AND id < (SELECT COALESCE(max(id), 0) - 1000 FROM events)`)
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("webhook %s: %w", hook, err)
	}
	return id, dropped, nil
}

// PendingEvents returns a hook's undelivered posts, oldest first.
func (s *Store) PendingEvents(ctx context.Context, hook string) ([]Event, error) {
	return sqldb.List(ctx, s.db.QueryContext, "webhook "+hook, func(r *sql.Rows) (Event, error) {
		var e Event
		var at string
		err := r.Scan(&e.ID, &e.Hook, &at, &e.Body)
		if err == nil {
			e.At, err = parseTime(at)
		}
		return e, err
	}, `SELECT id, hook, at, body FROM events WHERE hook = ? AND wake IS NULL ORDER BY id`, hook)
}

// BlockUpdated is when a block was last written, for staleness.
func (s *Store) BlockUpdated(ctx context.Context, name string) (time.Time, error) {
	var u string
	err := s.db.QueryRowContext(ctx, `SELECT updated FROM blocks WHERE name = ?`, name).Scan(&u)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, fmt.Errorf("block %q %w", name, ErrNotFound)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("block %q: %w", name, err)
	}
	return parseTime(u)
}

// wakeTables is step 2 of the store's schema.
var wakeTables = strings.TrimSpace(`
CREATE TABLE triggers (
	key      TEXT PRIMARY KEY,
	next_due TEXT NOT NULL,
	seen     TEXT NOT NULL,
	error    TEXT NOT NULL,
	updated  TEXT NOT NULL
);
CREATE TABLE wakes (
	id       INTEGER PRIMARY KEY AUTOINCREMENT,
	trigger  TEXT NOT NULL,
	place    TEXT NOT NULL,
	due      TEXT NOT NULL,
	at       TEXT NOT NULL,
	day      TEXT NOT NULL,
	tier     INTEGER NOT NULL,
	status   TEXT NOT NULL,
	reason   TEXT NOT NULL,
	reply    TEXT NOT NULL DEFAULT '',
	cost     REAL NOT NULL DEFAULT 0,
	finished TEXT NOT NULL DEFAULT '',
	UNIQUE (trigger, due)
);
CREATE INDEX wakes_day ON wakes (day, status);
CREATE TABLE received (
	id       INTEGER PRIMARY KEY AUTOINCREMENT,
	beach    TEXT NOT NULL,
	beach_id INTEGER NOT NULL,
	sender   TEXT NOT NULL,
	nonce    TEXT NOT NULL,
	signed   TEXT NOT NULL,
	received TEXT NOT NULL,
	message  TEXT NOT NULL,
	envelope TEXT NOT NULL,
	wake     INTEGER,
	UNIQUE (sender, nonce)
);
CREATE INDEX received_pending ON received (wake, id);
CREATE INDEX received_beach ON received (beach, beach_id);
CREATE TABLE events (
	id   INTEGER PRIMARY KEY AUTOINCREMENT,
	hook TEXT NOT NULL,
	at   TEXT NOT NULL,
	body TEXT NOT NULL,
	wake INTEGER
);
CREATE INDEX events_pending ON events (hook, wake, id);`)

// wakeAnswers is step 3: answered is 1 once the model answered a wake
// (WakeAnswered), so what the wake carried counts as delivered even when
// its process is killed afterwards.
const wakeAnswers = `ALTER TABLE wakes ADD COLUMN answered INTEGER NOT NULL DEFAULT 0;`

// wakeScripted is step 4: scripted is 1 on a wake a scripted provider
// answered (WakeEnd.Scripted), whose cost nothing charged; the wakes
// before it were real.
const wakeScripted = `ALTER TABLE wakes ADD COLUMN scripted INTEGER NOT NULL DEFAULT 0;`
