package solve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// The knowledge graph (spec §2C): kg_nodes and kg_edges, namespaced ids.

func ensureKG(ctx context.Context, q execer, id, typ, label string, props any) error {
	var p any
	if props != nil {
		p = jsonText(props)
	}
	_, err := q.ExecContext(ctx, `INSERT INTO kg_nodes (id, type, label, properties, created_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET properties = COALESCE(excluded.properties, kg_nodes.properties)`, id, typ, label, p, now())
	return err
}

func addEdge(ctx context.Context, q execer, source, relation, target string, props any) error {
	var p any
	if props != nil {
		p = jsonText(props)
	}
	_, err := q.ExecContext(ctx, "INSERT INTO kg_edges (id, source_id, target_id, relation, properties, created_at) VALUES (?, ?, ?, ?, ?, ?)",
		newID(), source, target, relation, p, now())
	return err
}

// refreshEdge creates the edge once (provides, requires, similar_to).
func refreshEdge(ctx context.Context, q interface {
	execer
	querier
}, source, relation, target string, props any) error {
	var n int
	// +target_id keeps SQLite on the source index: a target such as
	// capability:generate_code has an edge from every goal pattern.
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM kg_edges WHERE source_id = ? AND relation = ? AND +target_id = ?", source, relation, target).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	return addEdge(ctx, q, source, relation, target, props)
}

func normalizeGoal(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// goalPatternID is "goal_pattern:" + sha256(normalize(goal_summary)).
func goalPatternID(summary string) string {
	sum := sha256.Sum256([]byte(normalizeGoal(summary)))
	return "goal_pattern:" + hex.EncodeToString(sum[:])
}

// similarity is the Jaccard index of two summaries' word sets: the boot
// similarity persisted as similar_to edges (score ≥ similarThreshold).
func similarity(a, b string) float64 {
	wa, wb := map[string]bool{}, map[string]bool{}
	for _, w := range strings.Fields(normalizeGoal(a)) {
		wa[strings.Trim(w, ".,;:()\"'`")] = true
	}
	for _, w := range strings.Fields(normalizeGoal(b)) {
		wb[strings.Trim(w, ".,;:()\"'`")] = true
	}
	inter := 0
	for w := range wa {
		if wb[w] {
			inter++
		}
	}
	union := len(wa) + len(wb) - inter
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}

const similarThreshold = 0.5

// patternInfo is a goal pattern of an earlier run, cached at run start.
type patternInfo struct{ ID, Label string }

func (k *Kernel) otherPatterns(ctx context.Context, root string) ([]patternInfo, error) {
	rows, err := k.db.QueryContext(ctx, "SELECT id, label FROM kg_nodes WHERE type = 'goal_pattern' AND COALESCE(properties->>'root_id', '') != ? ORDER BY created_at, id", root)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []patternInfo
	for rows.Next() {
		var p patternInfo
		if err := rows.Scan(&p.ID, &p.Label); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// KGContext is what the three boot-time queries return for a goal
// pattern, rendered as the spec's RESOLUTION HISTORY block.
type KGContext struct {
	Similar  []SimilarGoal     `json:"similar"`
	Outcomes []ResolverOutcome `json:"resolver_outcomes"`
	Failures []FailureCount    `json:"failure_modes"`
}

// SimilarGoal is a similar_to neighbour.
type SimilarGoal struct {
	ID    string  `json:"id"`
	Label string  `json:"label"`
	Score float64 `json:"score"`
}

// ResolverOutcome is a resolver's record on similar patterns.
type ResolverOutcome struct {
	ID        string  `json:"id"`
	Label     string  `json:"label"`
	Successes int     `json:"successes"`
	Failures  int     `json:"failures"`
	BestSigma float64 `json:"best_sigma_v"`
}

// FailureCount is a failure mode seen on the pattern.
type FailureCount struct {
	Label       string `json:"label"`
	Occurrences int    `json:"occurrences"`
}

// QueryKG runs the spec's boot-time queries for a goal pattern: similar
// goal patterns, resolver outcomes on them, and failure modes (of the
// pattern and its similar patterns). CROSS JOIN fixes SQLite's join order
// so each query starts from the pattern's own edges; left to the planner
// they scan every edge of a relation, and a run slows as its graph grows.
func (k *Kernel) QueryKG(ctx context.Context, pattern string) (*KGContext, error) {
	c := &KGContext{}
	rows, err := k.db.QueryContext(ctx, `SELECT gp2.id, gp2.label, CAST(e.properties->>'score' AS REAL) AS score
		FROM kg_nodes gp1
		JOIN kg_edges e ON e.source_id = gp1.id AND e.relation = 'similar_to'
		JOIN kg_nodes gp2 ON gp2.id = e.target_id AND gp2.type = 'goal_pattern'
		WHERE gp1.id = ? ORDER BY score DESC, gp2.id LIMIT 10`, pattern)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var s SimilarGoal
		if err := rows.Scan(&s.ID, &s.Label, &s.Score); err != nil {
			rows.Close()
			return nil, err
		}
		c.Similar = append(c.Similar, s)
	}
	rows.Close()
	rows, err = k.db.QueryContext(ctx, `SELECT r.id, r.label,
		SUM(CASE WHEN e.relation = 'succeeded_on' THEN 1 ELSE 0 END) AS successes,
		SUM(CASE WHEN e.relation = 'failed_on' THEN 1 ELSE 0 END) AS failures,
		COALESCE(MAX(CAST(e.properties->>'sigma_v' AS REAL)), 0) AS best_sigma_v
		FROM kg_edges sim CROSS JOIN kg_nodes gp CROSS JOIN kg_edges e CROSS JOIN kg_nodes r
		WHERE sim.source_id = ? AND sim.relation = 'similar_to' AND gp.id = sim.target_id
		AND e.target_id = gp.id AND e.relation IN ('succeeded_on', 'failed_on') AND r.id = e.source_id AND r.type = 'resolver'
		GROUP BY r.id ORDER BY successes DESC, best_sigma_v DESC, r.id`, pattern)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var o ResolverOutcome
		if err := rows.Scan(&o.ID, &o.Label, &o.Successes, &o.Failures, &o.BestSigma); err != nil {
			rows.Close()
			return nil, err
		}
		c.Outcomes = append(c.Outcomes, o)
	}
	rows.Close()
	patterns := []string{pattern}
	for _, s := range c.Similar {
		patterns = append(patterns, s.ID)
	}
	counts := map[string]int{}
	for _, p := range patterns {
		rows, err = k.db.QueryContext(ctx, `SELECT fm.label, COUNT(*) as occurrences
			FROM kg_nodes gp CROSS JOIN kg_edges e_try CROSS JOIN kg_nodes a CROSS JOIN kg_edges e_fail CROSS JOIN kg_nodes fm
			WHERE gp.id = ? AND e_try.target_id = gp.id AND e_try.relation = 'tried_for'
			AND a.id = e_try.source_id AND a.type = 'resolution_attempt'
			AND e_fail.source_id = a.id AND e_fail.relation = 'failed_because'
			AND fm.id = e_fail.target_id AND fm.type = 'failure_mode'
			GROUP BY fm.id`, p)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var f FailureCount
			if err := rows.Scan(&f.Label, &f.Occurrences); err != nil {
				rows.Close()
				return nil, err
			}
			counts[f.Label] += f.Occurrences
		}
		rows.Close()
	}
	for l, n := range counts {
		c.Failures = append(c.Failures, FailureCount{l, n})
	}
	sort.Slice(c.Failures, func(i, j int) bool {
		if c.Failures[i].Occurrences != c.Failures[j].Occurrences {
			return c.Failures[i].Occurrences > c.Failures[j].Occurrences
		}
		return c.Failures[i].Label < c.Failures[j].Label
	})
	return c, nil
}

// Render is the RESOLUTION HISTORY block injected into prompts (§2C);
// "" when the graph knows nothing about the goal.
func (c *KGContext) Render(summary string) string {
	if len(c.Similar) == 0 && len(c.Outcomes) == 0 && len(c.Failures) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[RESOLUTION HISTORY for goal: %q]\n\nSimilar goals attempted: %d\n", summary, len(c.Similar))
	for _, s := range c.Similar {
		fmt.Fprintf(&b, "  - %q (similarity %.2f)\n", s.Label, s.Score)
	}
	if len(c.Outcomes) > 0 {
		b.WriteString("\nResolvers on similar goals:\n")
		for _, o := range c.Outcomes {
			fmt.Fprintf(&b, "  - %s: %d succeeded, %d failed (best sigma_v=%.2f)\n", strings.TrimPrefix(o.ID, "resolver:"), o.Successes, o.Failures, o.BestSigma)
		}
	}
	if len(c.Failures) > 0 {
		b.WriteString("\nKnown failure modes for this goal type:\n")
		for _, f := range c.Failures {
			fmt.Fprintf(&b, "  - %s (%d occurrences)\n", f.Label, f.Occurrences)
		}
	}
	b.WriteString("\n[END RESOLUTION HISTORY]")
	return b.String()
}

// LookupBeforeBuild is the spec's mandatory step-10 query: resolvers that
// provide the capability, best empirical record first.
func (k *Kernel) LookupBeforeBuild(ctx context.Context, q querier, capability string) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT r.id, r.label
		FROM kg_nodes cap
		JOIN kg_edges p ON p.target_id = cap.id AND p.relation = 'provides'
		JOIN kg_nodes r ON r.id = p.source_id AND r.type = 'resolver'
		WHERE cap.id = ? GROUP BY r.id ORDER BY r.created_at, r.id`, "capability:"+capability)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, label string
		if err := rows.Scan(&id, &label); err != nil {
			return nil, err
		}
		out = append(out, strings.TrimPrefix(id, "resolver:"))
	}
	return out, rows.Err()
}

// constraintSignature is sorted(set((type, domain))) without budget-class
// domains (§2C).
func constraintSignature(cs []ConstraintView) [][2]string {
	var sig [][2]string
	for _, c := range cs {
		if c.Domain == "cost" || c.Domain == "schedule" {
			continue
		}
		p := [2]string{c.Type, c.Domain}
		if !slices.Contains(sig, p) {
			sig = append(sig, p)
		}
	}
	slices.SortFunc(sig, func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	if sig == nil {
		sig = [][2]string{}
	}
	return sig
}
