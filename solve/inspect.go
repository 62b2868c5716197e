package solve

import (
	"context"
	"fmt"
	"strings"
)

// Status renders a run's tree: states, σ, budget spent/allocated. With
// root "" every run is listed.
func (k *Kernel) Status(ctx context.Context, root string) (string, error) {
	var b strings.Builder
	if root == "" {
		rows, err := k.db.QueryContext(ctx, "SELECT n.id FROM nodes n JOIN artifacts a ON a.node_id = n.id AND a.type = 'run_config' WHERE n.parent_id IS NULL ORDER BY n.rowid")
		if err != nil {
			return "", err
		}
		var roots []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return "", err
			}
			roots = append(roots, id)
		}
		rows.Close()
		if len(roots) == 0 {
			return "no runs in this kernel.db; start one with solve run\n", nil
		}
		for _, r := range roots {
			res, err := k.RunResult(ctx, r)
			if err != nil {
				return "", err
			}
			n, _ := loadNode(ctx, k.db, r)
			fmt.Fprintf(&b, "%s  %-17s  σ_system %.2f  $%.4f of $%.2f  %d nodes  %q\n", r, res.Outcome, res.SigmaSystem, res.SpentUSD, res.AllocatedUSD, res.Nodes, trim(n.Summary, 60))
		}
		return b.String(), nil
	}
	root, err := k.resolveRoot(ctx, root)
	if err != nil {
		return "", err
	}
	nodes, err := loadNodes(ctx, k.db, "root_id = ?", root)
	if err != nil {
		return "", err
	}
	kids := map[string][]*nodeRow{}
	for _, n := range nodes {
		kids[n.Parent] = append(kids[n.Parent], n)
	}
	var walk func(n *nodeRow, depth int)
	walk = func(n *nodeRow, depth int) {
		bal, _ := balance(ctx, k.db, n.ID)
		sigma := "σ -"
		if n.SigmaV.Valid {
			sigma = fmt.Sprintf("σ_v %.2f σ_path %.2f", n.SigmaV.Float64, n.SigmaPath.Float64)
		}
		state := n.Status
		if n.Invalidated {
			state += " (invalidated)"
		}
		fmt.Fprintf(&b, "%s%s %-24s %s  $%.4f/$%.4f  attempts %d/%d  %s\n", strings.Repeat("  ", depth), short(n.ID), state, sigma,
			bal.Spent, bal.Allocated, n.AttemptCount, n.MaxAttempts, trim(n.Summary, 70))
		for _, c := range kids[n.ID] {
			walk(c, depth+1)
		}
	}
	for _, n := range kids[""] {
		walk(n, 0)
	}
	res, err := k.RunResult(ctx, root)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "outcome %s · σ_system %.2f · spent $%.4f of $%.2f · LLM calls %d · open requests %d\n", res.Outcome, res.SigmaSystem, res.SpentUSD, res.AllocatedUSD, res.LLMCalls, res.OpenRequests)
	return b.String(), nil
}

// Logs renders log rows, filtered by tier (0 = all) and node id prefix.
func (k *Kernel) Logs(ctx context.Context, tier int, node string) (string, error) {
	rows, err := k.db.QueryContext(ctx, `SELECT tier, COALESCE(node_id, ''), timestamp, COALESCE(summary, ''), COALESCE(detail, '') FROM logs
		WHERE (? = 0 OR tier = ?) AND (? = '' OR node_id LIKE ? || '%') ORDER BY rowid`, tier, tier, node, node)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var t int
		var n, ts, s, d string
		if err := rows.Scan(&t, &n, &ts, &s, &d); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "[%s] T%d %s", ts, t, s)
		if t > 1 && d != "" {
			fmt.Fprintf(&b, " %s", trim(d, 300))
		}
		b.WriteByte('\n')
	}
	return b.String(), rows.Err()
}

// ArtifactList renders the artifacts of a run (all runs with root "").
func (k *Kernel) ArtifactList(ctx context.Context, root string) (string, error) {
	rows, err := k.db.QueryContext(ctx, `SELECT a.id, a.type, a.format, a.sha256, a.size_bytes, COALESCE(a.sigma, -1), a.node_id FROM artifacts a
		JOIN nodes n ON n.id = a.node_id WHERE ? = '' OR n.root_id LIKE ? || '%' ORDER BY a.rowid`, root, root)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, typ, format, sha, node string
		var size int
		var sigma float64
		if err := rows.Scan(&id, &typ, &format, &sha, &size, &sigma, &node); err != nil {
			return "", err
		}
		s := "-"
		if sigma >= 0 {
			s = fmt.Sprintf("%.2f", sigma)
		}
		fmt.Fprintf(&b, "%s  %-14s %-5s σ %-4s %6dB  artifact_store/%s  node %s\n", id, typ, format, s, size, sha[:16], short(node))
	}
	return b.String(), rows.Err()
}

// KGReport runs the three boot-time queries for a goal summary (or for
// every goal pattern when goal is ""), plus edge counts by relation.
func (k *Kernel) KGReport(ctx context.Context, goal, capability string) (string, error) {
	var b strings.Builder
	rows, err := k.db.QueryContext(ctx, "SELECT relation, COUNT(*) FROM kg_edges GROUP BY relation ORDER BY relation")
	if err != nil {
		return "", err
	}
	b.WriteString("edges:")
	for rows.Next() {
		var r string
		var n int
		if err := rows.Scan(&r, &n); err != nil {
			rows.Close()
			return "", err
		}
		fmt.Fprintf(&b, " %s=%d", r, n)
	}
	rows.Close()
	b.WriteByte('\n')
	var patterns [][2]string
	if goal != "" {
		patterns = [][2]string{{goalPatternID(goal), goal}}
	} else {
		rows, err := k.db.QueryContext(ctx, "SELECT id, label FROM kg_nodes WHERE type = 'goal_pattern' ORDER BY created_at, id")
		if err != nil {
			return "", err
		}
		for rows.Next() {
			var p [2]string
			if err := rows.Scan(&p[0], &p[1]); err != nil {
				rows.Close()
				return "", err
			}
			patterns = append(patterns, p)
		}
		rows.Close()
	}
	for _, p := range patterns {
		c, err := k.QueryKG(ctx, p[0])
		if err != nil {
			return "", err
		}
		if r := c.Render(p[1]); r != "" {
			b.WriteString(r + "\n")
		} else {
			fmt.Fprintf(&b, "[no history for %q]\n", p[1])
		}
	}
	if capability != "" {
		found, err := k.LookupBeforeBuild(ctx, k.db, capability)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "lookup-before-build %s: %s\n", capability, strings.Join(found, ", "))
	}
	return b.String(), nil
}
