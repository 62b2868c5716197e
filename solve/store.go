package solve

import (
	"context"
	"database/sql"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/llmkernels/kernels/internal/sqlite"
)

//go:embed schema.sql
var schemaSQL string

// schema is kernel.db: application_id "SOLV", user_version counting the
// steps. Files from before the marker used the same user_version
// numbering (0 or 1 for the five planning tables, 2 for all eleven), so
// they are adopted at that step.
var schema = &sqlite.Schema{
	Name: "solve kernel.db",
	ID:   sqlite.SolveID,
	Steps: []string{
		// 0 → 1: schema.sql, the spec's eleven tables (CREATE ... IF NOT
		// EXISTS: a planning-era file already holds five of them).
		schemaSQL,
		// 1 → 2: nodes gains invalidated_at, set on a subtree superseded by
		// backtracking or a reopened ancestor (its history is kept, it
		// leaves the live tree).
		"ALTER TABLE nodes ADD COLUMN invalidated_at TEXT",
	},
	Legacy: func(ctx context.Context, q sqlite.Querier) (int, bool, error) {
		tables, err := sqlite.Tables(ctx, q)
		if err != nil || !tables["nodes"] || !tables["constraints"] {
			return 0, false, err
		}
		var v int
		if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return 0, false, err
		}
		switch v {
		case 0, 1:
			return 0, true, nil // step 1 adds the tables a planning-era file lacks
		case 2:
			return 2, true, nil
		}
		return 0, false, nil
	},
}

// Kernel is an open kernel.db. Its methods do what the CLI does.
type Kernel struct {
	db   *sql.DB
	path string
	// readOnly: opened by OpenReadOnly, nothing may be written.
	readOnly bool
	// wmu queues this process's write transactions (SQLite has one
	// writer; a deferred transaction upgrading to a write could otherwise
	// fail with SQLITE_BUSY when workers commit at once).
	wmu sync.Mutex
}

// Open opens (creating if needed) the kernel database at path and brings
// its tables up to date.
func Open(ctx context.Context, path string) (*Kernel, error) {
	db, err := sqlite.Open(ctx, path, schema)
	if err != nil {
		return nil, err
	}
	return &Kernel{db: db, path: path}, nil
}

// OpenReadOnly opens the existing kernel database at path for the commands
// that only read (status, log, kg, artifacts, resolvers): it never creates
// or changes a file, and works where the directory cannot be written.
func OpenReadOnly(ctx context.Context, path string) (*Kernel, error) {
	db, err := sqlite.OpenReadOnly(ctx, path, schema)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no kernel.db at %s (%w): nothing has been planned or run here yet ('solve plan' or 'solve run' creates it; --db names another)", path, fs.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	return &Kernel{db: db, path: path, readOnly: true}, nil
}

// Close closes the database.
func (k *Kernel) Close() error { return k.db.Close() }

// Node statuses used by planning.
const (
	StatusPending          = "pending"
	StatusIdentifying      = "identifying_constraints"
	StatusSelectingCons    = "selecting_constraints"
	StatusSelectingResolve = "selecting_resolver"
	StatusResolving        = "resolving"
	StatusVerifying        = "verifying"
	StatusDecomposing      = "decomposing"
	StatusFailed           = "failed"
)

// transitions are the spec's valid node state transitions (§2), plus
// "failed" from any state (the first iteration's notes).
var transitions = map[string][]string{
	"pending":                 {"identifying_constraints"},
	"identifying_constraints": {"selecting_constraints"},
	"selecting_constraints":   {"selecting_resolver"},
	"selecting_resolver":      {"resolving", "infeasible"},
	"resolving":               {"verifying"},
	"verifying":               {"decomposing", "resolved", "gated", "selecting_resolver", "resolving", "pending"},
	"decomposing":             {"pending"},
	"gated":                   {"pending"},
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// transition moves a node from one status to another, refusing moves the
// spec does not allow and moves from a status the node is not in.
func transition(ctx context.Context, q execer, node, from, to string) error {
	if to != StatusFailed && !slices.Contains(transitions[from], to) {
		return fmt.Errorf("node %s: invalid transition %s → %s", node, from, to)
	}
	res, err := q.ExecContext(ctx, "UPDATE nodes SET status = ? WHERE id = ? AND status = ?", to, node, from)
	if err != nil {
		return fmt.Errorf("node %s: %s → %s: %w", node, from, to, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("node %s: %s → %s: the node is not in status %s", node, from, to, from)
	}
	return nil
}

func newID() string { return uuid.NewString() }

func jsonText(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("solve: marshal %T: %v", v, err)) // plain data types always marshal
	}
	return string(data)
}

func now() string { return time.Now().UTC().Format("2006-01-02 15:04:05.000") }

// log writes one tiered log row: tier 1 flow, 2 decision, 3 io.
func logRow(ctx context.Context, q execer, tier int, node, summary string, detail any) error {
	category := map[int]string{1: "flow", 2: "decision", 3: "io"}[tier]
	var d any
	if detail != nil {
		d = jsonText(detail)
	}
	_, err := q.ExecContext(ctx, "INSERT INTO logs (id, tier, node_id, timestamp, category, summary, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
		newID(), tier, node, now(), category, summary, d)
	return err
}

// createRoot inserts the goal's root node.
func createRoot(ctx context.Context, q execer, id, goal string, budgetUSD, timeSeconds float64) error {
	summary := goal
	if r := []rune(goal); len(r) > 120 {
		summary = string(r[:119]) + "…"
	}
	_, err := q.ExecContext(ctx, `INSERT INTO nodes (id, parent_id, root_id, goal_description, goal_summary, goal_modality, status,
		tau_local, tau_global, budget_allocated, time_allocated) VALUES (?, NULL, ?, ?, ?, 'text', 'pending', ?, ?, ?, ?)`,
		id, id, goal, summary, TauLocal, TauGlobal, budgetUSD, timeSeconds)
	return err
}

// attemptRecord is one resolver run of a planning stage.
type attemptRecord struct {
	Node        string
	Stage       string
	Feedback    []string
	Problems    []string
	FailureMode string
	CostUSD     float64
	Seconds     float64
	Summary     string
}

// verification is the spec's Verification shape, with the planning stage.
type verification struct {
	Stage        string  `json:"stage"`
	Verdict      string  `json:"verdict"`
	SigmaV       float64 `json:"sigma_v"`
	Checks       []check `json:"checks"`
	TraceSummary string  `json:"trace_summary"`
}

type check struct {
	ConstraintID string  `json:"constraint_id"`
	Passed       bool    `json:"passed"`
	SigmaI       float64 `json:"sigma_i"`
	Detail       any     `json:"detail"`
}

// recordAttempt appends a resolution_attempts row for the node and keeps
// attempt_count and last_attempt_id in step (spec invariants).
func recordAttempt(ctx context.Context, db *sql.DB, a attemptRecord) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var index int
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(attempt_index), 0) + 1 FROM resolution_attempts WHERE node_id = ?", a.Node).Scan(&index); err != nil {
		return err
	}
	verdict, sigma := SAT, 1.0
	var checks []check
	for _, p := range a.Problems {
		checks = append(checks, check{ConstraintID: "kernel:" + a.Stage, Passed: false, SigmaI: 1, Detail: p})
	}
	if len(a.Problems) > 0 || a.FailureMode != "" {
		verdict, sigma = UNSAT, 0
	}
	if checks == nil {
		checks = []check{{ConstraintID: "kernel:" + a.Stage, Passed: verdict == SAT, SigmaI: 1, Detail: a.Summary}}
	}
	v := verification{Stage: a.Stage, Verdict: verdict, SigmaV: sigma, Checks: checks, TraceSummary: a.Summary}
	var feedback, failure any
	if len(a.Feedback) > 0 {
		feedback = jsonText(map[string]any{"violations": a.Feedback})
	}
	if a.FailureMode != "" {
		failure = "failure:" + a.FailureMode
	}
	id := newID()
	if _, err := tx.ExecContext(ctx, `INSERT INTO resolution_attempts (id, node_id, attempt_index, resolver_id, feedback, verification,
		verdict, sigma_v, failure_mode, cost, time_seconds, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, a.Node, index, ResolverID, feedback, jsonText(v), verdict, sigma, failure, a.CostUSD, a.Seconds, now()); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE nodes SET attempt_count = ?, last_attempt_id = ? WHERE id = ?", index, id, a.Node); err != nil {
		return err
	}
	return tx.Commit()
}

// saveConstraints stores the constraints and sets the root's constraint
// sets: core (explicit, human), eligible and selected (all of them; the
// parsimony step belongs to `solve run`). It fills each constraint's DBID.
func saveConstraints(ctx context.Context, db *sql.DB, root string, cs []Constraint) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var core, all []string
	for i := range cs {
		c := &cs[i]
		c.DBID = newID()
		payload := map[string]any{"ref": c.ID, "sigma": c.Sigma, "explicit": c.Explicit, "quote": c.Quote,
			"removal_consequence": c.RemovalConsequence, "open_questions": c.OpenQuestions}
		if c.Type == Logic {
			payload["expr"] = c.Payload.Expr
		} else {
			payload["rubric"] = c.Payload.Rubric
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO constraints (id, type, domain, title, payload, provenance, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
			c.DBID, c.Type, c.Domain, c.Title, jsonText(payload), jsonText(c.Provenance), now()); err != nil {
			return err
		}
		all = append(all, c.DBID)
		if c.Explicit && c.Provenance.Source == "human" {
			core = append(core, c.DBID)
		}
	}
	if core == nil {
		core = []string{}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE nodes SET constraints_core_ids = ?, constraints_eligible_ids = ?, constraints_selected_ids = ? WHERE id = ?`,
		jsonText(core), jsonText(all), jsonText(all), root); err != nil {
		return err
	}
	if err := transition(ctx, tx, root, StatusIdentifying, StatusSelectingCons); err != nil {
		return err
	}
	if err := transition(ctx, tx, root, StatusSelectingCons, StatusSelectingResolve); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE nodes SET resolver_id = ? WHERE id = ?", ResolverID, root); err != nil {
		return err
	}
	if err := logRow(ctx, tx, 2, root, "constraints selected", map[string]any{"decision": "constraint_selection", "selected": all,
		"rationale": "planning mode keeps every extracted constraint; parsimony selection is part of solve run"}); err != nil {
		return err
	}
	return tx.Commit()
}

// saveDecomposition creates one child node per task of the final plan with
// its dependencies, stores the root's verification and σ, and moves the
// root verifying → decomposing → pending (waiting for its children).
func saveDecomposition(ctx context.Context, db *sql.DB, p *Plan, final []Task, a *Analysis) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	root := p.RootID
	dbid := map[string]string{}
	for _, c := range p.Constraints {
		dbid[c.ID] = c.DBID
	}
	v := verification{Stage: "plan", Verdict: SAT, SigmaV: a.SigmaV}
	resolved := []string{}
	for _, vd := range a.Verdicts {
		passed := vd.Verdict != UNSAT && (vd.Type == Logic || vd.Sigma >= TauLocal)
		if vd.Verdict == UNSAT {
			v.Verdict = UNSAT
		}
		if vd.Verdict == SAT {
			resolved = append(resolved, dbid[vd.ConstraintID])
		}
		v.Checks = append(v.Checks, check{ConstraintID: dbid[vd.ConstraintID], Passed: passed, SigmaI: vd.Sigma,
			Detail: map[string]any{"ref": vd.ConstraintID, "verdict": vd.Verdict, "expr": vd.Expr, "detail": vd.Detail}})
	}
	v.TraceSummary = fmt.Sprintf("%d tasks, mid cost $%.2f, critical path %sh; repair %s", len(final), a.Cost.Mid, num(a.Time.Mid), p.Repair.Status)
	if err := transition(ctx, tx, root, StatusVerifying, StatusDecomposing); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE nodes SET verification = ?, sigma_v = ?, sigma_path = ?, constraints_resolved_ids = ? WHERE id = ?`,
		jsonText(v), a.SigmaV, a.SigmaV, jsonText(resolved), root); err != nil {
		return err
	}
	nodeOf := map[string]string{}
	for i, t := range final {
		id := newID()
		nodeOf[t.ID] = id
		p.Tasks[i].NodeID = id
		if _, err := tx.ExecContext(ctx, `INSERT INTO nodes (id, parent_id, root_id, goal_description, goal_summary, goal_modality, status,
			constraints_inherited_ids, tau_local, tau_global, budget_allocated, time_allocated, created_at)
			VALUES (?, ?, ?, ?, ?, 'text', 'pending', ?, ?, ?, ?, ?, ?)`,
			id, root, root, t.ID+": "+t.Title+"\n"+t.Description, t.Title, jsonText(resolved), TauLocal, TauGlobal,
			t.CostUSD.Mid, t.Hours.Mid*3600, now()); err != nil {
			return err
		}
	}
	for _, t := range final {
		for _, d := range t.DependsOn {
			if _, err := tx.ExecContext(ctx, "INSERT INTO node_dependencies (node_id, depends_on) VALUES (?, ?)", nodeOf[t.ID], nodeOf[d]); err != nil {
				return err
			}
		}
	}
	if err := transition(ctx, tx, root, StatusDecomposing, StatusPending); err != nil {
		return err
	}
	if err := logRow(ctx, tx, 1, root, fmt.Sprintf("Node %s: DECOMPOSED into %d tasks; waiting for children", short(root), len(final)), nil); err != nil {
		return err
	}
	if err := logRow(ctx, tx, 2, root, "plan", map[string]any{"decision": "plan", "plan": p}); err != nil {
		return err
	}
	return tx.Commit()
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
