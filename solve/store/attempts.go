package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/llmkernels/kernels/internal/plainjson"
	"github.com/llmkernels/kernels/internal/sqldb"
)

// NewConstraint is a constraint to insert. Payload and Provenance are
// stored as JSON (the spec keeps the payload open-ended).
type NewConstraint struct {
	Type, Domain, Title string
	Payload, Provenance any
}

// AddConstraint inserts a constraint and returns its id.
func (c *Conn) AddConstraint(ctx context.Context, n NewConstraint) (string, error) {
	id := NewID()
	if _, err := c.exec(ctx, "INSERT INTO constraints (id, type, domain, title, payload, provenance, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
		id, n.Type, n.Domain, n.Title, asJSON(n.Payload), asJSON(n.Provenance), now()); err != nil {
		return "", fmt.Errorf("insert constraint %q: %w", n.Title, err)
	}
	return id, nil
}

// Constraint is a constraints row.
type Constraint struct {
	ID, Type, Domain, Title string
	Payload                 json.RawMessage
}

// Constraints loads constraints by id, in the order given.
func (c *Conn) Constraints(ctx context.Context, ids []string) ([]Constraint, error) {
	out := make([]Constraint, 0, len(ids))
	for _, id := range ids {
		k := Constraint{ID: id}
		var domain sql.NullString
		var payload string
		if err := c.row(ctx, "SELECT type, domain, title, payload FROM constraints WHERE id = ?", id).Scan(&k.Type, &domain, &k.Title, &payload); err != nil {
			return nil, fmt.Errorf("load constraint %s: %w", id, err)
		}
		k.Domain, k.Payload = domain.String, json.RawMessage(payload)
		out = append(out, k)
	}
	return out, nil
}

// ConstraintExists reports whether a constraints row has the id.
func (c *Conn) ConstraintExists(ctx context.Context, id string) (bool, error) {
	var n int
	if err := c.row(ctx, "SELECT COUNT(*) FROM constraints WHERE id = ?", id).Scan(&n); err != nil {
		return false, fmt.Errorf("look up constraint %s: %w", id, err)
	}
	return n == 1, nil
}

// NewAttempt is a resolution_attempts row to insert. Index 0 takes the
// node's next index. Verdict "" leaves the verification for later.
type NewAttempt struct {
	Node, Resolver, Plan, Output string
	Index                        int
	Inputs                       []string
	Feedback                     any // nil = none
	Verification                 any
	Verdict                      string
	SigmaV                       float64
	FailureMode                  string
	Cost, Seconds                float64
}

// AddAttempt inserts an attempt and keeps the node's attempt_count,
// last_attempt_id and output in step (spec invariants). It returns the
// attempt's id and index.
func (c *Conn) AddAttempt(ctx context.Context, a NewAttempt) (string, int, error) {
	if a.Index == 0 {
		if err := c.row(ctx, "SELECT COALESCE(MAX(attempt_index), 0) + 1 FROM resolution_attempts WHERE node_id = ?", a.Node).Scan(&a.Index); err != nil {
			return "", 0, fmt.Errorf("node %s: next attempt index: %w", a.Node, err)
		}
	}
	var verification, verdict, sigma any
	if a.Verdict != "" {
		verification, verdict, sigma = asJSON(a.Verification), a.Verdict, a.SigmaV
	}
	id := NewID()
	if _, err := c.exec(ctx, `INSERT INTO resolution_attempts (id, node_id, attempt_index, resolver_id, plan_artifact_id, input_artifact_ids,
		output_artifact_id, feedback, verification, verdict, sigma_v, failure_mode, cost, time_seconds, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, a.Node, a.Index, a.Resolver, nullStr(a.Plan), asJSON(plainjson.List(a.Inputs)), nullStr(a.Output), nullJSON(a.Feedback),
		verification, verdict, sigma, nullStr(a.FailureMode), a.Cost, a.Seconds, now()); err != nil {
		return "", 0, fmt.Errorf("node %s: insert attempt %d: %w", a.Node, a.Index, err)
	}
	if err := c.setNode(ctx, "record attempt", a.Node, "attempt_count = ?, last_attempt_id = ?, output_artifact_id = ?", a.Index, id, nullStr(a.Output)); err != nil {
		return "", 0, err
	}
	return id, a.Index, nil
}

// SetAttemptVerdict records an attempt's verification (its failure mode,
// if any, is set apart: SetAttemptFailure).
func (c *Conn) SetAttemptVerdict(ctx context.Context, id string, verification any, verdict string, sigmaV float64) error {
	if _, err := c.exec(ctx, "UPDATE resolution_attempts SET verification = ?, verdict = ?, sigma_v = ? WHERE id = ?",
		asJSON(verification), verdict, sigmaV, id); err != nil {
		return fmt.Errorf("attempt %s: record the verdict: %w", id, err)
	}
	return nil
}

// SetAttemptFailure sets an attempt's failure mode (solve/kg.Failed sets
// it with its knowledge-graph edge).
func (c *Conn) SetAttemptFailure(ctx context.Context, id, failureMode string) error {
	if _, err := c.exec(ctx, "UPDATE resolution_attempts SET failure_mode = ? WHERE id = ?", failureMode, id); err != nil {
		return fmt.Errorf("attempt %s: set failure mode: %w", id, err)
	}
	return nil
}

// Attempt is a resolution_attempts row.
type Attempt struct {
	ID, Node, Resolver, Plan, Output string
	Index                            int
	Verification, Verdict            string   // "" before the attempt is verified
	SigmaV                           *float64 // nil before the attempt is verified
	FailureMode                      string
	Cost, Seconds                    float64
}

const attemptCols = `id, node_id, attempt_index, resolver_id, COALESCE(plan_artifact_id, ''), COALESCE(output_artifact_id, ''),
	COALESCE(CAST(verification AS TEXT), ''), COALESCE(verdict, ''), sigma_v, COALESCE(failure_mode, ''), COALESCE(cost, 0), COALESCE(time_seconds, 0)`

func scanAttempt(r interface{ Scan(...any) error }) (Attempt, error) {
	var a Attempt
	err := r.Scan(&a.ID, &a.Node, &a.Index, &a.Resolver, &a.Plan, &a.Output, &a.Verification, &a.Verdict, &a.SigmaV, &a.FailureMode, &a.Cost, &a.Seconds)
	return a, err
}

// Attempt loads one attempt.
func (c *Conn) Attempt(ctx context.Context, id string) (*Attempt, error) {
	a, err := scanAttempt(c.row(ctx, "SELECT "+attemptCols+" FROM resolution_attempts WHERE id = ?", id))
	if err != nil {
		return nil, fmt.Errorf("load attempt %s: %w", id, err)
	}
	return &a, nil
}

// Attempts lists a node's attempts by index.
func (c *Conn) Attempts(ctx context.Context, node string) ([]Attempt, error) {
	return sqldb.List(ctx, c.query, fmt.Sprintf("list the attempts of node %s", node), func(r *sql.Rows) (Attempt, error) { return scanAttempt(r) }, "SELECT "+attemptCols+" FROM resolution_attempts WHERE node_id = ? ORDER BY attempt_index", node)
}

// SuggestionTried reports whether a --suggest input of the node was
// already scored as an attempt (its output names it as candidate_of).
func (c *Conn) SuggestionTried(ctx context.Context, node, suggestion string) (bool, error) {
	var n int
	if err := c.row(ctx, `SELECT COUNT(*) FROM resolution_attempts r JOIN artifacts a ON a.id = r.output_artifact_id
		WHERE r.node_id = ? AND a.metadata->>'candidate_of' = ?`, node, suggestion).Scan(&n); err != nil {
		return false, fmt.Errorf("node %s: look up attempts of suggestion %s: %w", node, suggestion, err)
	}
	return n > 0, nil
}

// DeliveredResolver is a resolver a HIRE answer delivered to a request
// the node waited on, not yet tried on it ("" when none).
func (c *Conn) DeliveredResolver(ctx context.Context, node string) (string, error) {
	return c.untried(ctx, "a delivered resolver", `SELECT c.resolver_id FROM capability_requests c JOIN capability_request_nodes w ON w.request_id = c.id
		WHERE w.node_id = ? AND c.status = 'delivered' AND c.resolver_id IS NOT NULL
		AND c.resolver_id NOT IN (SELECT resolver_id FROM resolution_attempts WHERE node_id = ?) ORDER BY c.{seq} DESC LIMIT 1`, node)
}

// BuiltResolver is a resolver BUILD registered for the node and not yet
// tried on it ("" when none).
func (c *Conn) BuiltResolver(ctx context.Context, node string) (string, error) {
	return c.untried(ctx, "a built resolver", `SELECT id FROM resolvers WHERE built_by = 'system' AND built_for_node_id = ?
		AND id NOT IN (SELECT resolver_id FROM resolution_attempts WHERE node_id = ?) ORDER BY {seq} DESC LIMIT 1`, node)
}

func (c *Conn) untried(ctx context.Context, what, q, node string) (string, error) {
	var id string
	err := c.row(ctx, q, node, node).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("node %s: look up %s: %w", node, what, err)
	}
	return id, nil
}
