package solve

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ── Step 11: HIRE ──
// Headless by default: the request is recorded (fingerprint dedupe), the
// node waits and other nodes continue; `solve hire` answers it. A
// fingerprint that was declined is never asked again: the node becomes
// infeasible. With --interactive the human is asked on the terminal now.
func (s *stepCtx) hire(ctx context.Context, g hireGap, reason string) (stepResult, error) {
	n := s.n
	if g.BudgetClass == "over_budget" {
		// A new denial after a top-up is a new request.
		g.Constraints = append(g.Constraints, fmt.Sprintf("allocated $%.4f", s.budget.own.Allocated))
	}
	fp := fingerprint(g.Tag, g.Constraints, g.BudgetClass)
	var status, reqID string
	err := s.e.k.db.QueryRowContext(ctx, "SELECT id, status FROM capability_requests WHERE capability_tag = ? AND request_fingerprint = ? AND (root_id = ? OR status = 'declined') ORDER BY status = 'declined' DESC LIMIT 1",
		g.Tag, fp, n.Root).Scan(&reqID, &status)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return stepResult{}, err
	}
	switch status {
	case "declined":
		return s.declined(ctx, fmt.Sprintf("capability request %s (%s) was declined before; not asking again", short(reqID), g.Tag))
	case "requested":
		return stepResult{status: n.Status, waitHire: true}, nil
	case "delivered":
		return stepResult{}, fmt.Errorf("capability request %s (%s) was answered, yet the node needs it again; answer differently (solve hire) or add a resolver", short(reqID), g.Tag)
	}
	kg, _ := s.e.k.QueryKG(ctx, goalPatternID(n.Summary))
	var similar []string
	for _, sg := range kg.Similar {
		similar = append(similar, sg.Label)
	}
	detail := map[string]any{"node_id": n.ID, "node_status": n.Status, "goal": n.Summary, "reason": reason, "resolver_type": g.Type,
		"need": g.Tag, "build_constraints": nonNil(g.Constraints), "tried": nonNil(s.attemptHistory(ctx)), "failed_because": g.Rationale,
		"budget_remaining":         map[string]float64{"cost_usd": s.budget.own.RemainingCost(), "time_seconds": s.budget.own.RemainingTime()},
		"similar_past_resolutions": nonNil(similar), "budget_class": g.BudgetClass}
	id := newID()
	err = s.commit(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO capability_requests (id, root_id, capability_tag, request_fingerprint, status, detail, created_at)
			VALUES (?, ?, ?, ?, 'requested', ?, ?)`, id, n.Root, g.Tag, fp, jsonText(detail), now()); err != nil {
			return err
		}
		return s.flow(ctx, tx, "HIRE (%s): need a human for %s; request %s waits (solve hire)", reason, g.Tag, short(id))
	})
	if err != nil {
		return stepResult{}, err
	}
	if s.e.cfg.Interactive && s.e.term != nil {
		s.e.termMu.Lock()
		err := s.e.k.askHuman(ctx, id, s.e.term, s.e.terminal())
		s.e.termMu.Unlock()
		if err != nil {
			return stepResult{}, err
		}
		if err := s.e.k.db.QueryRowContext(ctx, "SELECT status FROM capability_requests WHERE id = ?", id).Scan(&status); err != nil {
			return stepResult{}, err
		}
		switch status {
		case "declined":
			return s.declined(ctx, fmt.Sprintf("capability request %s (%s) declined on the terminal", short(id), g.Tag))
		case "delivered":
			return stepResult{status: n.Status}, nil // the node goes on with the resolver or budget
		}
	}
	return stepResult{status: n.Status, waitHire: true}, nil
}

// declined ends a node whose capability request a person declined: it
// becomes infeasible, and the flow log says why.
func (s *stepCtx) declined(ctx context.Context, why string) (stepResult, error) {
	n := s.n
	err := s.commit(ctx, func(tx *sql.Tx) error {
		if err := markInfeasible(ctx, tx, n.ID, n.Status); err != nil {
			return err
		}
		return s.flow(ctx, tx, "INFEASIBLE: %s", why)
	})
	return stepResult{status: StatusInfeasible}, err
}

// markInfeasible: a declined HIRE ends the node (spec §5 escalate_to_hire
// sets infeasible from the node's current state; selecting_resolver →
// infeasible is the table's transition, the others follow the pseudocode).
func markInfeasible(ctx context.Context, tx *sql.Tx, id, from string) error {
	if from == StatusSelectingResolve {
		return transition(ctx, tx, id, from, StatusInfeasible)
	}
	_, err := tx.ExecContext(ctx, "UPDATE nodes SET status = 'infeasible' WHERE id = ? AND status = ?", id, from)
	return err
}

// Request is an open or answered capability request.
type CapabilityRequest struct {
	ID          string         `json:"id"`
	RootID      string         `json:"root_id"`
	Capability  string         `json:"capability_tag"`
	Fingerprint string         `json:"request_fingerprint"`
	Status      string         `json:"status"`
	ResolverID  string         `json:"resolver_id,omitempty"`
	Detail      map[string]any `json:"detail"`
}

// Requests lists capability requests (all statuses when all is true).
func (k *Kernel) Requests(ctx context.Context, all bool) ([]CapabilityRequest, error) {
	rows, err := k.db.QueryContext(ctx, "SELECT id, root_id, capability_tag, request_fingerprint, status, COALESCE(resolver_id, ''), COALESCE(detail, '{}') FROM capability_requests WHERE ? OR status = 'requested' ORDER BY rowid", all)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []CapabilityRequest
	for rows.Next() {
		var r CapabilityRequest
		var d string
		if err := rows.Scan(&r.ID, &r.RootID, &r.Capability, &r.Fingerprint, &r.Status, &r.ResolverID, &d); err != nil {
			return nil, err
		}
		_ = json.Unmarshal([]byte(d), &r.Detail)
		out = append(out, r)
	}
	return out, rows.Err()
}

// HireAnswer answers a capability request: exactly one of Command (a
// resolver command to register, toolized), AddUSD/AddSeconds (budget), or
// Decline.
type HireAnswer struct {
	Command    string
	Label      string
	AddUSD     float64
	AddSeconds float64
	Decline    bool
	Reason     string
}

// AnswerRequest records a human's answer. The run continues with solve resume.
func (k *Kernel) AnswerRequest(ctx context.Context, prefix string, a HireAnswer) (string, error) {
	reqs, err := k.Requests(ctx, true)
	if err != nil {
		return "", err
	}
	var r *CapabilityRequest
	for i := range reqs {
		if strings.HasPrefix(reqs[i].ID, prefix) {
			if r != nil {
				return "", fmt.Errorf("request %q is ambiguous; give more characters", prefix)
			}
			r = &reqs[i]
		}
	}
	if r == nil || prefix == "" {
		return "", fmt.Errorf("no capability request %q; list them with solve hire", prefix)
	}
	if r.Status != "requested" {
		return "", fmt.Errorf("request %s is already %s", short(r.ID), r.Status)
	}
	node, _ := r.Detail["node_id"].(string)
	set := 0
	for _, b := range []bool{a.Command != "", a.AddUSD > 0 || a.AddSeconds > 0, a.Decline} {
		if b {
			set++
		}
	}
	if set != 1 {
		return "", errors.New("answer with exactly one of --resolver-command CMD, --add-budget USD (and/or --add-time), or --decline")
	}
	var msg string
	err = k.write(ctx, func(tx *sql.Tx) error {
		d := r.Detail
		switch {
		case a.Decline:
			d["answer"] = map[string]any{"kind": "decline", "reason": a.Reason}
			msg = fmt.Sprintf("declined %s (%s); it will not be asked again", short(r.ID), r.Capability)
			if _, err := tx.ExecContext(ctx, "UPDATE capability_requests SET status = 'declined', detail = ? WHERE id = ?", jsonText(d), r.ID); err != nil {
				return err
			}
		case a.Command != "":
			// Toolization (B8): the human's answer is a registered resolver.
			var n int
			if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM resolvers WHERE built_by = 'human'").Scan(&n); err != nil {
				return err
			}
			id := fmt.Sprintf("human-%s-%d", slug(r.Capability), n+1)
			typ, _ := d["resolver_type"].(string)
			if typ == "" {
				typ = "digital"
			}
			label := a.Label
			if label == "" {
				label = "Human-provided " + r.Capability
			}
			if err := registerResolver(ctx, tx, ResolverEntry{ID: id, Label: label, Type: typ, Capabilities: []string{r.Capability}, BuiltBy: "human",
				BuiltForNode: node, LatencyEstimate: 10, Metadata: map[string]any{"command": a.Command}}); err != nil {
				return err
			}
			if err := ensureKG(ctx, tx, "actor:human", "actor", "human", nil); err != nil {
				return err
			}
			if err := addEdge(ctx, tx, "resolver:"+id, "built_by", "actor:human", nil); err != nil {
				return err
			}
			d["answer"] = map[string]any{"kind": "resolver", "resolver_id": id}
			msg = fmt.Sprintf("registered resolver %s providing %s for request %s", id, r.Capability, short(r.ID))
			if _, err := tx.ExecContext(ctx, "UPDATE capability_requests SET status = 'delivered', resolver_id = ?, detail = ? WHERE id = ?", id, jsonText(d), r.ID); err != nil {
				return err
			}
		default:
			if err := writeLedger(ctx, tx, ledgerEntry{Node: node, Event: "allocate", Amount: a.AddUSD, Time: a.AddSeconds, Description: "HIRE: budget added by a human"}); err != nil {
				return err
			}
			d["answer"] = map[string]any{"kind": "increase_budget", "add_cost": a.AddUSD, "add_time_seconds": a.AddSeconds}
			msg = fmt.Sprintf("added $%.2f and %.0fs to node %s for request %s", a.AddUSD, a.AddSeconds, short(node), short(r.ID))
			if _, err := tx.ExecContext(ctx, "UPDATE capability_requests SET status = 'delivered', detail = ? WHERE id = ?", jsonText(d), r.ID); err != nil {
				return err
			}
		}
		return logRow(ctx, tx, 1, node, "HIRE answered: "+msg, nil)
	})
	return msg, err
}

// askHuman asks on the terminal (--interactive).
func (k *Kernel) askHuman(ctx context.Context, id string, in *bufio.Reader, out io.Writer) error {
	reqs, err := k.Requests(ctx, false)
	if err != nil {
		return err
	}
	for _, r := range reqs {
		if r.ID != id {
			continue
		}
		fmt.Fprint(out, FormatRequest(r))
		fmt.Fprint(out, "Answer: [c]ommand to register, [b]udget to add (USD), [d]ecline, or Enter to leave it open: ")
		line, _ := in.ReadString('\n')
		kind, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
		var a HireAnswer
		switch kind {
		case "c":
			a.Command = arg
		case "b":
			a.AddUSD, _ = strconv.ParseFloat(arg, 64)
		case "d":
			a.Decline = true
		default:
			return nil
		}
		msg, err := k.AnswerRequest(ctx, id, a)
		if err == nil {
			fmt.Fprintln(out, msg)
		}
		return err
	}
	return nil
}

// FormatRequest renders a request with the context the spec lists: need,
// tried, failed because, budget remaining, similar past resolutions.
func FormatRequest(r CapabilityRequest) string {
	var b strings.Builder
	d := r.Detail
	fmt.Fprintf(&b, "request %s  [%s]  root %s\n", short(r.ID), r.Status, short(r.RootID))
	fmt.Fprintf(&b, "  Goal:   %v\n  Need:   %s (%v, %v)\n", d["goal"], r.Capability, d["resolver_type"], d["reason"])
	fmt.Fprintf(&b, "  Tried:  %v\n  Failed because: %v\n", d["tried"], d["failed_because"])
	fmt.Fprintf(&b, "  Build constraints: %v\n  Budget remaining: %v\n  Similar past resolutions: %v\n", d["build_constraints"], d["budget_remaining"], d["similar_past_resolutions"])
	return b.String()
}
