package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/llmkernels/kernels/internal/sqldb"
	"github.com/llmkernels/kernels/solve/record"
)

// The knowledge graph's tables (spec §2C): kg_nodes and kg_edges with
// namespaced ids. What the ids mean is solve/kg's business.

// EnsureKGNode inserts a graph node, or refreshes its properties (nil
// props keep the old ones).
func (c *Conn) EnsureKGNode(ctx context.Context, id, typ, label string, props any) error {
	if _, err := c.exec(ctx, `INSERT INTO kg_nodes (id, type, label, properties, created_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET properties = COALESCE(excluded.properties, kg_nodes.properties)`, id, typ, label, nullJSON(props), now()); err != nil {
		return fmt.Errorf("kg: ensure node %s: %w", id, err)
	}
	return nil
}

// AddEdge inserts a graph edge.
func (c *Conn) AddEdge(ctx context.Context, source, relation, target string, props any) error {
	if _, err := c.exec(ctx, "INSERT INTO kg_edges (id, source_id, target_id, relation, properties, created_at) VALUES (?, ?, ?, ?, ?, ?)",
		NewID(), source, target, relation, nullJSON(props), now()); err != nil {
		return fmt.Errorf("kg: add edge %s %s %s: %w", source, relation, target, err)
	}
	return nil
}

// AddEdgeOnce inserts the edge unless one with the same ends and relation
// exists (provides, requires, similar_to, failed_because).
func (c *Conn) AddEdgeOnce(ctx context.Context, source, relation, target string, props any) error {
	ok, err := c.HasEdge(ctx, source, relation, target)
	if err != nil || ok {
		return err
	}
	return c.AddEdge(ctx, source, relation, target, props)
}

// HasEdge reports whether an edge with these ends and relation exists.
func (c *Conn) HasEdge(ctx context.Context, source, relation, target string) (bool, error) {
	var n int
	// {noindex}target_id keeps SQLite on the source index: a target such
	// as capability:generate_code has an edge from every goal pattern.
	if err := c.row(ctx, "SELECT COUNT(*) FROM kg_edges WHERE source_id = ? AND relation = ? AND {noindex}target_id = ?", source, relation, target).Scan(&n); err != nil {
		return false, fmt.Errorf("kg: look up edge %s %s %s: %w", source, relation, target, err)
	}
	return n > 0, nil
}

// Pattern is a goal_pattern graph node.
type Pattern struct{ ID, Label string }

// GoalPatterns lists goal patterns, oldest first, leaving out those
// recorded by the run exceptRoot ("" = none left out).
func (c *Conn) GoalPatterns(ctx context.Context, exceptRoot string) ([]Pattern, error) {
	return sqldb.List(ctx, c.query, "kg: list goal patterns", func(r *sql.Rows) (Pattern, error) {
		var p Pattern
		err := r.Scan(&p.ID, &p.Label)
		return p, err
	}, `SELECT id, label FROM kg_nodes WHERE type = 'goal_pattern' AND (? = '' OR COALESCE(properties->>'root_id', '') != ?)
		ORDER BY created_at, id`, exceptRoot, exceptRoot)
}

// SimilarGoal is a similar_to neighbour of a goal pattern.
type SimilarGoal struct {
	ID    string  `json:"id"`
	Label string  `json:"label"`
	Score float64 `json:"score"`
}

// ResolverOutcome is a resolver's record on a pattern's similar patterns.
type ResolverOutcome struct {
	ID        string  `json:"id"`
	Label     string  `json:"label"`
	Successes int     `json:"successes"`
	Failures  int     `json:"failures"`
	BestSigma float64 `json:"best_sigma_v"`
}

// FailureCount is a failure mode seen on a goal pattern.
type FailureCount struct {
	Label       string `json:"label"`
	Occurrences int    `json:"occurrences"`
}

// The boot-time queries (§2C). CROSS JOIN fixes SQLite's join order so
// each starts from the pattern's own edges; left to the planner they scan
// every edge of a relation, and a run slows as its graph grows.

// SimilarGoals lists a pattern's similar_to neighbours, best first (at most 10).
func (c *Conn) SimilarGoals(ctx context.Context, pattern string) ([]SimilarGoal, error) {
	return sqldb.List(ctx, c.query, fmt.Sprintf("kg: similar goals of %s", pattern), func(r *sql.Rows) (SimilarGoal, error) {
		var s SimilarGoal
		err := r.Scan(&s.ID, &s.Label, &s.Score)
		return s, err
	}, `SELECT gp2.id, gp2.label, CAST(e.properties->>'score' AS {float}) AS score
		FROM kg_nodes gp1
		JOIN kg_edges e ON e.source_id = gp1.id AND e.relation = 'similar_to'
		JOIN kg_nodes gp2 ON gp2.id = e.target_id AND gp2.type = 'goal_pattern'
		WHERE gp1.id = ? ORDER BY score DESC, gp2.id LIMIT 10`, pattern)
}

// ResolverOutcomes lists the resolvers' records on a pattern's similar
// patterns, most successes first.
func (c *Conn) ResolverOutcomes(ctx context.Context, pattern string) ([]ResolverOutcome, error) {
	return sqldb.List(ctx, c.query, fmt.Sprintf("kg: resolver outcomes on %s", pattern), func(r *sql.Rows) (ResolverOutcome, error) {
		var o ResolverOutcome
		err := r.Scan(&o.ID, &o.Label, &o.Successes, &o.Failures, &o.BestSigma)
		return o, err
	}, `SELECT r.id, r.label,
		SUM(CASE WHEN e.relation = 'succeeded_on' THEN 1 ELSE 0 END) AS successes,
		SUM(CASE WHEN e.relation = 'failed_on' THEN 1 ELSE 0 END) AS failures,
		COALESCE(MAX(CAST(e.properties->>'sigma_v' AS {float})), 0) AS best_sigma_v
		FROM kg_edges sim CROSS JOIN kg_nodes gp CROSS JOIN kg_edges e CROSS JOIN kg_nodes r
		WHERE sim.source_id = ? AND sim.relation = 'similar_to' AND gp.id = sim.target_id
		AND e.target_id = gp.id AND e.relation IN ('succeeded_on', 'failed_on') AND r.id = e.source_id AND r.type = 'resolver'
		GROUP BY r.id ORDER BY successes DESC, best_sigma_v DESC, r.id`, pattern)
}

// FailureModes counts the failure modes of the attempts tried for a pattern.
func (c *Conn) FailureModes(ctx context.Context, pattern string) ([]FailureCount, error) {
	return sqldb.List(ctx, c.query, fmt.Sprintf("kg: failure modes of %s", pattern), func(r *sql.Rows) (FailureCount, error) {
		var f FailureCount
		err := r.Scan(&f.Label, &f.Occurrences)
		return f, err
	}, `SELECT fm.label, COUNT(*) as occurrences
		FROM kg_nodes gp CROSS JOIN kg_edges e_try CROSS JOIN kg_nodes a CROSS JOIN kg_edges e_fail CROSS JOIN kg_nodes fm
		WHERE gp.id = ? AND e_try.target_id = gp.id AND e_try.relation = 'tried_for'
		AND a.id = e_try.source_id AND a.type = 'resolution_attempt'
		AND e_fail.source_id = a.id AND e_fail.relation = 'failed_because'
		AND fm.id = e_fail.target_id AND fm.type = 'failure_mode'
		GROUP BY fm.id`, pattern)
}

// Providers lists the resolver graph ids that provide a capability graph
// id, oldest first (the lookup-before-build query, §2C).
func (c *Conn) Providers(ctx context.Context, capability string) ([]string, error) {
	return sqldb.List(ctx, c.query, fmt.Sprintf("kg: providers of %s", capability), sqldb.Column[string], `SELECT r.id
		FROM kg_nodes cap
		JOIN kg_edges p ON p.target_id = cap.id AND p.relation = 'provides'
		JOIN kg_nodes r ON r.id = p.source_id AND r.type = 'resolver'
		WHERE cap.id = ? GROUP BY r.id ORDER BY MIN(r.created_at), r.id`, capability)
}

// Targets lists the labels of the nodes a source points at by relation,
// in label order.
func (c *Conn) Targets(ctx context.Context, source, relation string) ([]string, error) {
	return sqldb.List(ctx, c.query, fmt.Sprintf("kg: %s targets of %s", relation, source), sqldb.Column[string], "SELECT k.label FROM kg_edges e JOIN kg_nodes k ON k.id = e.target_id WHERE e.source_id = ? AND e.relation = ? ORDER BY k.label", source, relation)
}

// EdgeCounts counts the graph's edges by relation.
func (c *Conn) EdgeCounts(ctx context.Context) ([]record.EdgeCount, error) {
	return sqldb.List(ctx, c.query, "kg: count edges", func(r *sql.Rows) (record.EdgeCount, error) {
		var rc record.EdgeCount
		err := r.Scan(&rc.Relation, &rc.Count)
		return rc, err
	}, "SELECT relation, COUNT(*) FROM kg_edges GROUP BY relation ORDER BY relation")
}

// DanglingEdges counts edges that point at a missing graph node.
func (c *Conn) DanglingEdges(ctx context.Context) (int, error) {
	var n int
	if err := c.row(ctx, "SELECT COUNT(*) FROM kg_edges e WHERE NOT EXISTS (SELECT 1 FROM kg_nodes WHERE id = e.source_id) OR NOT EXISTS (SELECT 1 FROM kg_nodes WHERE id = e.target_id)").Scan(&n); err != nil {
		return 0, fmt.Errorf("kg: count dangling edges: %w", err)
	}
	return n, nil
}
