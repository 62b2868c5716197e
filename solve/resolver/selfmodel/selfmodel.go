// Package selfmodel is self-model-0: it answers from the registry, ledger
// and node store. Its one operation (loop.OpSelfModel) gives the router
// its candidates for the required capabilities, with their record.
package selfmodel

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/store"
)

// Resolver is self-model-0 over a kernel.db.
type Resolver struct{ st *store.Store }

// New is self-model-0 reading st.
func New(st *store.Store) *Resolver { return &Resolver{st: st} }

// Estimate: reading the registry costs nothing.
func (s *Resolver) Estimate(ctx context.Context, t *loop.Call) (float64, float64) { return 0, 0 }

// Resolve lists the routing candidates for t.Params["capabilities"].
func (s *Resolver) Resolve(ctx context.Context, t *loop.Call) (*loop.Output, error) {
	if t.Op != loop.OpSelfModel {
		return nil, loop.Permanent("capability_mismatch", fmt.Errorf("self-model-0 does not do operation %q", t.Op))
	}
	req, _ := t.Params["capabilities"].([]string)
	cands, err := loop.Candidates(ctx, s.st, req)
	if err != nil {
		return nil, err
	}
	out := &loop.Output{}
	if out.Answer, err = json.Marshal(cands); err != nil {
		return nil, loop.Permanent("invalid_format", err)
	}
	return out, nil
}
