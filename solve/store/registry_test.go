package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/internal/pgtest"
	"github.com/llmkernels/kernels/internal/sqlite"
)

// atStep is a new database of dialect d (its URL or path) at schema step
// n, holding rows (SQL run after the steps).
func atStep(t *testing.T, d string, n int, rows string) string {
	t.Helper()
	if d == "postgres" {
		db := pgtest.New(t)
		pgExec(t, db, fmt.Sprintf("CREATE TABLE solve_schema (only_row BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (only_row), application TEXT NOT NULL, version INTEGER NOT NULL); INSERT INTO solve_schema (application, version) VALUES ('%s', %d);", pgMarker, n)+
			strings.Join(pgSteps()[:n], ";")+";"+rows)
		return db
	}
	db := filepath.Join(t.TempDir(), "kernel.db")
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(strings.Join(schema.Steps[:n], ";") + fmt.Sprintf(";PRAGMA application_id = %d; PRAGMA user_version = %d;", sqlite.SolveID, n) + rows); err != nil {
		t.Fatal(err)
	}
	return db
}

// A database at step 3 holds an open request naming its node only in its
// detail: step 4 records that node as waiting on it, so the scheduler
// still sees it waiting after the upgrade, on both engines.
func TestStep4KeepsTheNodeOfAnOpenRequestWaiting(t *testing.T) {
	const rows = `INSERT INTO nodes (id, root_id, goal_description, goal_summary, goal_modality, tau_local, tau_global) VALUES ('n', 'n', 'g', 'g', 'text', 0.5, 0.5);
		INSERT INTO capability_requests (id, root_id, capability_tag, request_fingerprint, status, detail) VALUES ('r', 'n', 'tag', 'fp', 'requested', '{"node_id": "n"}')`
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			ctx := context.Background()
			st, err := Open(ctx, atStep(t, d, 3, rows))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			tree, err := st.Tree(ctx, "n")
			if err != nil || len(tree) != 1 || !tree[0].WaitHire {
				t.Errorf("after step 4 the node does not wait: %+v %v", tree, err)
			}
			if nodes, err := st.RequestNodes(ctx, "r"); err != nil || !slices.Equal(nodes, []string{"n"}) {
				t.Errorf("nodes waiting on the request: %v %v", nodes, err)
			}
		})
	}
}

// A database at step 4 holds calls that resume settled at their hold
// (their tier-3 row says so) beside calls billed as they cost: step 5
// marks the first of unknown outcome, on both engines.
func TestStep5MarksTheCallsSettledAtTheirHoldAsUnknown(t *testing.T) {
	const rows = `INSERT INTO nodes (id, root_id, goal_description, goal_summary, goal_modality, tau_local, tau_global) VALUES ('n', 'n', 'g', 'g', 'text', 0.5, 0.5);
		INSERT INTO budget_ledger (id, node_id, event_type, amount, time_amount, resolver_id, description, reservation_id) VALUES
			('l1', 'n', 'spend', 0.25, 30, 'claude-code-0', 'resolve', 'r1'), ('l2', 'n', 'spend', 0.01, 2, 'claude-code-0', 'verify', 'r2');
		INSERT INTO logs (id, tier, node_id, summary, detail) VALUES
			('g1', 3, 'n', 'claude-code-0 resolve (settled at its reservation after a stop)', '{"reservation_id": "r1", "settled_at_reservation": true}'),
			('g2', 3, 'n', 'claude-code-0 verify', '{"reservation_id": "r2"}')`
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			ctx := context.Background()
			st, err := Open(ctx, atStep(t, d, 4, rows))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			tb, err := st.TreeBudget(ctx, "n")
			if err != nil || tb.SpentUSD != 0.26 || tb.UnknownUSD != 0.25 {
				t.Errorf("after step 5: %+v %v", tb, err)
			}
		})
	}
}

// A request answered already cannot be answered again: two `solve hire
// ID --add-budget` racing both read it open, and the second to write
// must roll back rather than add its top-up too.
func TestARequestIsAnsweredOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		var id string
		err := st.Write(ctx, func(tx *Tx) error {
			if _, err := tx.exec(ctx, `INSERT INTO nodes (id, root_id, goal_description, goal_summary, goal_modality, tau_local, tau_global)
				VALUES ('n', 'n', 'g', 'g', 'text', 0.5, 0.5)`); err != nil {
				return err
			}
			var err error
			id, err = tx.AddRequest(ctx, "n", "n", "tag", "fp", map[string]any{"node_id": "n"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		answer := func() error {
			return st.Write(ctx, func(tx *Tx) error { return tx.AnswerRequest(ctx, id, Delivered, "", map[string]any{}) })
		}
		if err := answer(); err != nil {
			t.Fatal(err)
		}
		if err := answer(); err == nil || !strings.Contains(err.Error(), "answered meanwhile") {
			t.Errorf("a second answer: %v, want refused", err)
		}
	})
}

// Two nodes of a run meeting the same gap at once both looked for a prior
// request and found none: the second to add it waits on the first's
// request, on both engines. (Before, its insert failed on the unique
// fingerprint and stopped the run.)
func TestTwoNodesAddingTheSameRequestShareIt(t *testing.T) {
	const rows = `INSERT INTO nodes (id, root_id, goal_description, goal_summary, goal_modality, tau_local, tau_global) VALUES ('n', 'n', 'g', 'g', 'text', 0.5, 0.5);
		INSERT INTO nodes (id, root_id, parent_id, goal_description, goal_summary, goal_modality, tau_local, tau_global) VALUES ('a', 'n', 'n', 'g', 'g', 'text', 0.5, 0.5);
		INSERT INTO nodes (id, root_id, parent_id, goal_description, goal_summary, goal_modality, tau_local, tau_global) VALUES ('b', 'n', 'n', 'g', 'g', 'text', 0.5, 0.5)`
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			ctx := context.Background()
			st, err := Open(ctx, atStep(t, d, len(schema.Steps), rows))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var ids []string
			for _, node := range []string{"a", "b"} {
				if err := st.Write(ctx, func(tx *Tx) error {
					id, err := tx.AddRequest(ctx, "n", node, "tag", "fp", map[string]any{"node_id": node})
					ids = append(ids, id)
					return err
				}); err != nil {
					t.Fatalf("node %s: %v", node, err)
				}
			}
			if nodes, err := st.RequestNodes(ctx, ids[0]); ids[0] != ids[1] || err != nil || !slices.Equal(nodes, []string{"a", "b"}) {
				t.Errorf("requests %v; waiting on the first: %v %v", ids, nodes, err)
			}
		})
	}
}
