package blocks

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/pscale"
)

// storeBlocks opens a store in dir and its Blocks, not yet Ready; the
// store is closed when the test ends.
func storeBlocks(t *testing.T, dir string, o Options) *Blocks {
	t.Helper()
	st, err := store.Open(filepath.Join(dir, "hermitcrab.db"), store.Options{MaxBlockBytes: o.MaxBlockBytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	k, err := New(st, o)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newBlocks is a ready Blocks (the default shell seeded) in a temporary
// directory.
func newBlocks(t *testing.T, o Options) *Blocks {
	t.Helper()
	k := storeBlocks(t, t.TempDir(), o)
	if err := k.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	return k
}

// at is the address s, which the test writes well.
func at(t testing.TB, s string) pscale.Address {
	t.Helper()
	a, err := ParseAddress("path", s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func text(t *testing.T, k *Blocks, block, path string) string {
	t.Helper()
	v, err := k.ReadNode(context.Background(), block, at(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return v.Content
}

// bspQuery is the query of a spindle, or with a point of a point.
func bspQuery(t testing.TB, spindle string, point ...int) pscale.Query {
	t.Helper()
	var p any
	if len(point) > 0 {
		p = point[0]
	}
	q, err := pscale.ParseQuery("", spindle, p)
	if err != nil {
		t.Fatal(err)
	}
	return q
}
