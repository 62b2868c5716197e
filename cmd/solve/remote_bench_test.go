package main_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// benchLeaves and benchDelay shape BenchmarkWorkersOnPostgres: a root
// that splits into benchLeaves independent pages, every model call
// answered after benchDelay (a model's latency; the kernel's own work is
// what the in-process benchmarks measure).
const (
	benchLeaves = 8
	benchDelay  = 250 * time.Millisecond
)

// The critical path in model calls: the root's identify, select, route,
// resolve, verify and decompose, one page's identify, select, route,
// resolve and verify, then the consistency check and the assembly.
const benchCriticalCalls = 6 + 5 + 2

// BenchmarkWorkersOnPostgres: the same tree run with solve run --remote on
// PostgreSQL by 1 and by 4 solve worker processes; wall time of the run
// (workers already started) against its critical path (benchCriticalCalls
// × benchDelay). Run with
//
//	go test ./cmd/solve -run '^$' -bench WorkersOnPostgres
func BenchmarkWorkersOnPostgres(b *testing.B) {
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			var wall time.Duration
			for range b.N {
				b.StopTimer()
				dir, u := pgDir(b)
				api := newFakeAPI(b, 1, pagesSteps(benchLeaves)...)
				slow := slowFront(b, api.front.URL, benchDelay, nil)
				api.front = slow
				workers := startWorkers(b, api, dir, u, n)
				b.StartTimer()
				began := time.Now()
				r := api.run(b, dir, "run", pagesGoal, "--remote", "--budget", "5", "--time", "1h")
				wall += time.Since(began)
				b.StopTimer()
				if r.code != 0 || !strings.Contains(r.stdout, ": achieved") {
					b.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
				}
				for _, w := range workers {
					_ = w.cmd.Process.Kill()
					<-w.done
				}
			}
			critical := time.Duration(benchCriticalCalls) * benchDelay
			b.ReportMetric((wall / time.Duration(b.N)).Seconds(), "wall-s/run")
			b.ReportMetric(critical.Seconds(), "critical-path-s")
			b.ReportMetric(float64(wall/time.Duration(b.N))/float64(critical), "x-critical-path")
		})
	}
}

// inFlight counts the requests a front is serving, and the most at once.
type inFlight struct {
	mu        sync.Mutex
	now, peak int
}

func (f *inFlight) add(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now += n
	f.peak = max(f.peak, f.now)
}

// most is the most requests served at once.
func (f *inFlight) most() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.peak
}

// slowFront is a proxy to target that waits d before each request;
// count, when not nil, counts the requests in flight.
func slowFront(tb testing.TB, target string, d time.Duration, count *inFlight) *httptest.Server {
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(u)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if count != nil {
			count.add(1)
			defer count.add(-1)
		}
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
		p.ServeHTTP(w, r)
	}))
	tb.Cleanup(s.Close)
	return s
}
