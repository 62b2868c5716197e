// Package kg is the SOLVE kernel's knowledge graph (spec §2C): namespaced
// ids (resolver:, node:, attempt:, artifact:, constraint:, capability:,
// failure:, goal_pattern:, actor:human), goal patterns and their
// similarity, the three boot-time queries behind the RESOLUTION HISTORY
// block injected into prompts, and lookup-before-build. The tables and
// their SQL are solve/store's.
package kg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/llmkernels/kernels/solve/store"
)

func normalizeGoal(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// PatternID is "goal_pattern:" + sha256(normalize(goal_summary)).
func PatternID(summary string) string {
	sum := sha256.Sum256([]byte(normalizeGoal(summary)))
	return "goal_pattern:" + hex.EncodeToString(sum[:])
}

// Similarity is the Jaccard index of two summaries' word sets: the boot
// similarity persisted as similar_to edges (score ≥ SimilarThreshold).
func Similarity(a, b string) float64 {
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

// SimilarThreshold is the least Similarity recorded as a similar_to edge.
const SimilarThreshold = 0.5

// RecordPattern writes a goal's pattern node (tagged with its run), a
// requires edge per capability, and similar_to edges to the patterns of
// earlier runs (others) at least SimilarThreshold alike. Patterns of the
// same run are left out, so a run's prompts do not depend on the order
// its own nodes finish.
func RecordPattern(ctx context.Context, c *store.Conn, summary, root string, caps []string, others []store.Pattern) error {
	gp := PatternID(summary)
	if err := c.EnsureKGNode(ctx, gp, "goal_pattern", summary, map[string]any{"root_id": root}); err != nil {
		return err
	}
	for _, cp := range caps {
		if err := c.EnsureKGNode(ctx, "capability:"+cp, "capability", cp, nil); err != nil {
			return err
		}
		if err := c.AddEdgeOnce(ctx, gp, "requires", "capability:"+cp, nil); err != nil {
			return err
		}
	}
	for _, p := range others {
		if p.ID == gp {
			continue
		}
		if sc := Similarity(summary, p.Label); sc >= SimilarThreshold {
			if err := c.AddEdgeOnce(ctx, gp, "similar_to", p.ID, map[string]any{"score": math.Round(sc*1000) / 1000}); err != nil {
				return err
			}
		}
	}
	return nil
}

// FailureID is the graph id of a failure mode ("low_confidence" →
// "failure:low_confidence"); an id given already is kept.
func FailureID(mode string) string {
	if strings.HasPrefix(mode, "failure:") {
		return mode
	}
	return "failure:" + mode
}

// Failed records that an attempt failed because of a failure mode: the
// attempt's failure_mode, the failure_mode graph node and the attempt's
// failed_because edge to it, together. It is the one way the loop sets a
// failure mode, so no attempt has one without its edge (the Step 9
// failure-pattern query finds only what has an edge).
func Failed(ctx context.Context, c *store.Conn, attempt, mode string) error {
	id := FailureID(mode)
	if err := c.SetAttemptFailure(ctx, attempt, id); err != nil {
		return err
	}
	if err := c.EnsureKGNode(ctx, id, "failure_mode", strings.TrimPrefix(id, "failure:"), nil); err != nil {
		return err
	}
	return c.AddEdgeOnce(ctx, AttemptID(attempt), "failed_because", id, nil)
}

// AttemptID is the graph id of a resolution attempt.
func AttemptID(attempt string) string { return "attempt:" + attempt }

// FailureRecorded reports whether an attempt's failure mode has its
// failed_because edge (CheckInvariants).
func FailureRecorded(ctx context.Context, c *store.Conn, attempt, mode string) (bool, error) {
	return c.HasEdge(ctx, AttemptID(attempt), "failed_because", FailureID(mode))
}

// RequiredCapabilities are the capabilities a goal's pattern requires.
func RequiredCapabilities(ctx context.Context, c *store.Conn, summary string) ([]string, error) {
	return c.Targets(ctx, PatternID(summary), "requires")
}

// Context is what the three boot-time queries return for a goal pattern,
// rendered as the spec's RESOLUTION HISTORY block.
type Context struct {
	Similar  []store.SimilarGoal     `json:"similar"`
	Outcomes []store.ResolverOutcome `json:"resolver_outcomes"`
	Failures []store.FailureCount    `json:"failure_modes"`
}

// Query runs the spec's boot-time queries for a goal pattern: similar
// goal patterns, resolver outcomes on them, and failure modes (of the
// pattern and its similar patterns).
func Query(ctx context.Context, c *store.Conn, pattern string) (*Context, error) {
	var k Context
	var err error
	if k.Similar, err = c.SimilarGoals(ctx, pattern); err != nil {
		return nil, err
	}
	if k.Outcomes, err = c.ResolverOutcomes(ctx, pattern); err != nil {
		return nil, err
	}
	patterns := []string{pattern}
	for _, s := range k.Similar {
		patterns = append(patterns, s.ID)
	}
	counts := map[string]int{}
	for _, p := range patterns {
		fs, err := c.FailureModes(ctx, p)
		if err != nil {
			return nil, err
		}
		for _, f := range fs {
			counts[f.Label] += f.Occurrences
		}
	}
	for l, n := range counts {
		k.Failures = append(k.Failures, store.FailureCount{Label: l, Occurrences: n})
	}
	sort.Slice(k.Failures, func(i, j int) bool {
		if k.Failures[i].Occurrences != k.Failures[j].Occurrences {
			return k.Failures[i].Occurrences > k.Failures[j].Occurrences
		}
		return k.Failures[i].Label < k.Failures[j].Label
	})
	// Empty lists, not null, in JSON.
	if k.Similar == nil {
		k.Similar = []store.SimilarGoal{}
	}
	if k.Outcomes == nil {
		k.Outcomes = []store.ResolverOutcome{}
	}
	if k.Failures == nil {
		k.Failures = []store.FailureCount{}
	}
	return &k, nil
}

// Empty reports whether the graph knows nothing about the pattern.
func (k *Context) Empty() bool {
	return len(k.Similar) == 0 && len(k.Outcomes) == 0 && len(k.Failures) == 0
}

// Render is the RESOLUTION HISTORY block injected into prompts (§2C);
// "" when the graph knows nothing about the goal.
func (k *Context) Render(summary string) string {
	if k.Empty() {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[RESOLUTION HISTORY for goal: %q]\n\nSimilar goals attempted: %d\n", summary, len(k.Similar))
	for _, s := range k.Similar {
		fmt.Fprintf(&b, "  - %q (similarity %.2f)\n", s.Label, s.Score)
	}
	if len(k.Outcomes) > 0 {
		b.WriteString("\nResolvers on similar goals:\n")
		for _, o := range k.Outcomes {
			fmt.Fprintf(&b, "  - %s: %d succeeded, %d failed (best sigma_v=%.2f)\n", strings.TrimPrefix(o.ID, "resolver:"), o.Successes, o.Failures, o.BestSigma)
		}
	}
	if len(k.Failures) > 0 {
		b.WriteString("\nKnown failure modes for this goal type:\n")
		for _, f := range k.Failures {
			fmt.Fprintf(&b, "  - %s (%d occurrences)\n", f.Label, f.Occurrences)
		}
	}
	b.WriteString("\n[END RESOLUTION HISTORY]")
	return b.String()
}

// LookupBeforeBuild is the spec's mandatory step-10 query: the resolvers
// that provide the capability, oldest first.
func LookupBeforeBuild(ctx context.Context, c *store.Conn, capability string) ([]string, error) {
	ids, err := c.Providers(ctx, "capability:"+capability)
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		ids[i] = strings.TrimPrefix(id, "resolver:")
	}
	return ids, nil
}

// ConstraintSignature is sorted(set((type, domain))) without budget-class
// domains (§2C).
func ConstraintSignature(cs []store.Constraint) [][2]string {
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
