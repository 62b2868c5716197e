package beach

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/identity"
)

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
