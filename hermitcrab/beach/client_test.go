package beach

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

func TestFileNoncesAcceptEachPairOnceAcrossHandlesAndGoroutines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "received")
	ctx := context.Background()
	var fresh atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				ok, err := FileNonces{Path: path}.Use(ctx, "agent", string(rune('a'+i)))
				if err != nil {
					t.Error(err)
				}
				if ok {
					fresh.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if fresh.Load() != 20 {
		t.Fatalf("%d pairs accepted as new, want 20", fresh.Load())
	}
	if ok, _ := (FileNonces{Path: path}).Use(ctx, "other-agent", "a"); !ok {
		t.Fatal("the same nonce from another agent was refused")
	}
	if ok, _ := (FileNonces{Path: path}).Use(ctx, "agent", "a"); ok {
		t.Fatal("a pair seen before was accepted by a new handle")
	}
}
