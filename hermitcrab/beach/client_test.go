package beach

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/identity"
)

func TestFileNoncesAcceptEachPairOnceAcrossHandlesAndGoroutines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "received")
	ctx := context.Background()
	now := time.Now()
	var fresh atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			handle := &FileNonces{Path: path} // each stands for a process of its own
			for i := range 20 {
				ok, err := handle.Use(ctx, "agent", string(rune('a'+i)), now)
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
	if ok, _ := (&FileNonces{Path: path}).Use(ctx, "other-agent", "a", now); !ok {
		t.Fatal("the same nonce from another agent was refused")
	}
	if ok, _ := (&FileNonces{Path: path}).Use(ctx, "agent", "a", now); ok {
		t.Fatal("a pair seen before was accepted by a new handle")
	}
}

// The file is pruned by the window once it has doubled: it stays bounded
// by the messages of one window, a pair inside the window is still
// refused after the rewrite (by this handle and by another that sees the
// rewrite), and a message signed at or before the newest time forgotten is
// refused as stale, since its nonce can no longer be checked.
func TestFileNoncesStayBoundedByTheWindowAndRefuseWhatTheyForgot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "received")
	ctx := context.Background()
	t0 := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	clock := t0
	f := &FileNonces{Path: path, Window: time.Hour, Now: func() time.Time { return clock }}
	other := &FileNonces{Path: path, Window: time.Hour, Now: func() time.Time { return clock }}
	// 3,000 messages, one signed every 12 s over ten hours, each received
	// as it is signed.
	const n = 3000
	for i := range n {
		clock = t0.Add(time.Duration(i) * 12 * time.Second)
		ok, err := f.Use(ctx, "agent", fmt.Sprintf("%032x", i), clock)
		if err != nil || !ok {
			t.Fatalf("message %d: %v %v", i, ok, err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// One window holds 300 messages; the file is rewritten once it holds
	// 1,024 lines (or twice what the last rewrite kept).
	if lines := strings.Count(string(data), "\n"); lines > minCompact+1 {
		t.Fatalf("the file holds %d lines after %d messages with a window of 300: not pruned", lines, n)
	}
	if !strings.HasPrefix(string(data), "horizon ") {
		t.Fatalf("no horizon line after pruning: %.80q", data)
	}
	for _, h := range []*FileNonces{f, other} {
		if ok, err := h.Use(ctx, "agent", fmt.Sprintf("%032x", n-1), clock); ok || err != nil {
			t.Fatalf("the newest pair again: fresh %v, err %v; want a replay", ok, err)
		}
		ok, err := h.Use(ctx, "agent", fmt.Sprintf("%032x", 5), t0.Add(60*time.Second))
		if ref, isRef := identity.AsRefusal(err); ok || !isRef || ref.Reason != identity.ReasonStale {
			t.Fatalf("a forgotten pair again: fresh %v, err %v; want refused as stale", ok, err)
		}
	}
	// A new message signed a minute ago (inside the window) is fresh.
	if ok, err := other.Use(ctx, "agent", "new", clock.Add(-time.Minute)); !ok || err != nil {
		t.Fatalf("a new message: %v %v", ok, err)
	}
}

// A line a crash cut short (no newline) is ignored and does not swallow
// the next pair; lines from before times were kept still count.
func TestFileNoncesSurviveACutLineAndReadOldLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "received")
	if err := os.WriteFile(path, []byte("agent old\nagent cut 17"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, now := context.Background(), time.Now()
	f := &FileNonces{Path: path}
	if ok, _ := f.Use(ctx, "agent", "old", now); ok {
		t.Fatal("a pair from an old file was accepted again")
	}
	if ok, err := f.Use(ctx, "agent", "next", now); !ok || err != nil {
		t.Fatalf("after a cut line: %v %v", ok, err)
	}
	if ok, _ := (&FileNonces{Path: path}).Use(ctx, "agent", "next", now); ok {
		t.Fatal("the pair written after a cut line was lost")
	}
}

// BenchmarkFileNonces is one Use on a file that already holds 20,000
// pairs: it reads only what was appended since, so its cost does not grow
// with the file.
func BenchmarkFileNonces(b *testing.B) {
	path := filepath.Join(b.TempDir(), "received")
	ctx, now := context.Background(), time.Now()
	var seed strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&seed, "agent seed%d %d\n", i, now.UnixNano())
	}
	if err := os.WriteFile(path, []byte(seed.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	f := &FileNonces{Path: path}
	if ok, err := f.Use(ctx, "agent", "seed0", now); ok || err != nil { // reads the file once
		b.Fatal("a seeded pair was fresh", err)
	}
	i := 0
	for b.Loop() {
		i++
		if ok, err := f.Use(ctx, "agent", fmt.Sprint("n", i), now); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// A hostile beach: a redirect is not followed (a signed request goes only
// where it was addressed, so a private read cannot be bounced to a beach
// that would accept it), and an endless answer is cut, not buffered.
func TestTheClientFollowsNoRedirectAndBoundsAnswers(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	id, _ := identity.Generate()
	c, _ := NewClient(redirecting.URL, id)
	ctx := context.Background()
	if _, _, err := c.Inbox(ctx, 10); err == nil || !strings.Contains(err.Error(), "307") {
		t.Fatalf("inbox from a redirecting beach: %v", err)
	}
	if _, err := c.Mark(ctx, "https://example.org/", "x"); err == nil {
		t.Fatal("a redirected write succeeded")
	}
	if elsewhere.Load() != 0 {
		t.Fatalf("the redirect was followed %d times", elsewhere.Load())
	}

	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"passports":[`)
		chunk := []byte(strings.Repeat(`{"agent":"x"},`, 1<<12))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer endless.Close()
	c2, _ := NewClient(endless.URL, nil)
	if _, _, err := c2.Passports(ctx, 10); err == nil {
		t.Fatal("an endless answer was accepted")
	}
}
