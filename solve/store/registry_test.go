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

// A database at step 3 holds an open request naming its node only in its
// detail: step 4 records that node as waiting on it, so the scheduler
// still sees it waiting after the upgrade, on both engines.
func TestStep4KeepsTheNodeOfAnOpenRequestWaiting(t *testing.T) {
	const rows = `INSERT INTO nodes (id, root_id, goal_description, goal_summary, goal_modality, tau_local, tau_global) VALUES ('n', 'n', 'g', 'g', 'text', 0.5, 0.5);
		INSERT INTO capability_requests (id, root_id, capability_tag, request_fingerprint, status, detail) VALUES ('r', 'n', 'tag', 'fp', 'requested', '{"node_id": "n"}')`
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			ctx := context.Background()
			db := filepath.Join(t.TempDir(), "kernel.db")
			if d == "postgres" {
				db = pgtest.New(t)
				s := pgSteps()
				pgExec(t, db, "CREATE TABLE solve_schema (only_row BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (only_row), application TEXT NOT NULL, version INTEGER NOT NULL); INSERT INTO solve_schema (application, version) VALUES ('"+pgMarker+"', 3);"+
					strings.Join(s[:3], ";")+";"+rows)
			} else {
				raw, err := sql.Open("sqlite", db)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := raw.Exec(strings.Join(schema.Steps[:3], ";") + fmt.Sprintf(";PRAGMA application_id = %d; PRAGMA user_version = 3;", sqlite.SolveID) + rows); err != nil {
					t.Fatal(err)
				}
				raw.Close()
			}
			st, err := Open(ctx, db)
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
