package loop

import (
	"context"
	"fmt"
	"slices"

	"github.com/llmkernels/kernels/solve/store"
)

// constraintViews loads constraints by id, named <prefix>1, <prefix>2, … in order.
func constraintViews(ctx context.Context, c *store.Conn, ids []string, prefix string) ([]ConstraintView, error) {
	cs, err := c.Constraints(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]ConstraintView, 0, len(cs))
	for i, k := range cs {
		out = append(out, ConstraintView{Ref: fmt.Sprintf("%s%d", prefix, i+1), ID: k.ID, Type: k.Type, Domain: k.Domain, Title: k.Title, Payload: k.Payload})
	}
	return out, nil
}

// insertConstraint stores a resolver's (or the human's) constraint and
// returns its id.
func insertConstraint(ctx context.Context, c *store.Conn, n NewConstraint, source, resolver string, derived []string) (string, error) {
	payload := map[string]any{}
	if n.Check != "" {
		payload["check"] = n.Check
	}
	if n.Expr != "" {
		payload["expr"] = n.Expr
	}
	if n.Rubric != "" {
		payload["rubric"] = n.Rubric
	}
	if derived == nil {
		derived = []string{}
	}
	prov := map[string]any{"source": source, "resolver_id": resolver, "derived_from_constraint_ids": derived}
	return c.AddConstraint(ctx, store.NewConstraint{Type: n.Type, Domain: n.Domain, Title: n.Title, Payload: payload, Provenance: prov})
}

// artifactViews loads artifacts as a resolver sees them; a human
// suggestion is labelled as an unprivileged idea.
func artifactViews(ctx context.Context, c *store.Conn, ids []string) ([]ArtifactView, error) {
	var out []ArtifactView
	for _, id := range ids {
		a, data, err := c.Artifact(ctx, id)
		if err != nil {
			return nil, err
		}
		typ := a.Type
		if typ == "suggestion" {
			typ = "candidate idea (unprivileged: score it against the constraints like any other)"
		}
		out = append(out, ArtifactView{Type: typ, Format: a.Format, Content: string(data), ID: id})
	}
	return out, nil
}

// union is a followed by the elements of b it lacks.
func union(a, b []string) []string {
	out := append([]string{}, a...)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// tail keeps the last 2,000 bytes of a command's output.
func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
