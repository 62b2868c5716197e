package server

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/beach"
	"github.com/llmkernels/kernels/hermitcrab/identity"
)

// One beach takes 1,000 concurrent signed writes (500 marks, 500 messages
// from 50 agents to 5 recipients) and loses none: every write is
// acknowledged and every one reads back verified. The address limit is off
// (all the agents share 127.0.0.1); the per-agent limit stays on at its
// default, which 20 writes an agent fit in.
func TestAThousandConcurrentSignedWritesLoseNothing(t *testing.T) {
	bothDatabases(t, func(t *testing.T, kind string) {
		b := startBeach(t, kind, func(c *Config) { c.AddrPerMinute = -1 })
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		const agents, each, urls = 50, 10, 10
		recipients := make([]*beach.Client, 5)
		ids := make([]*identity.Identity, 5)
		for i := range recipients {
			ids[i], recipients[i] = newAgent(t, b)
		}
		senders := make([]*beach.Client, agents)
		for i := range senders {
			_, senders[i] = newAgent(t, b)
		}
		start := make(chan struct{})
		errs := make(chan error, 2*agents*each)
		var wg sync.WaitGroup
		for a, c := range senders {
			for k := range each {
				wg.Add(2)
				go func() {
					defer wg.Done()
					<-start
					_, err := c.Mark(ctx, fmt.Sprintf("https://load.example/%d", k%urls), fmt.Sprintf("agent %d visit %d", a, k))
					errs <- err
				}()
				go func() {
					defer wg.Done()
					<-start
					to := ids[(a+k)%len(ids)].Agent()
					_, err := c.Send(ctx, beach.Message{To: to, Type: beach.TypeGeneral, Content: fmt.Sprintf("%d/%d", a, k)})
					errs <- err
				}()
			}
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("a write failed under load: %v", err)
			}
		}
		marks := 0
		for u := range urls {
			got, refused, err := senders[0].Marks(ctx, fmt.Sprintf("https://load.example/%d", u), 500)
			if err != nil || len(refused) > 0 {
				t.Fatalf("marks: %v %v", refused, err)
			}
			marks += len(got)
		}
		seen := map[string]bool{}
		for _, r := range recipients {
			got, refused, err := r.Inbox(ctx, 500)
			if err != nil || len(refused) > 0 {
				t.Fatalf("inbox: %v %v", refused, err)
			}
			for _, m := range got {
				seen[m.Body.Content] = true
			}
		}
		if marks != agents*each || len(seen) != agents*each {
			t.Fatalf("read back %d marks and %d distinct messages, want %d of each", marks, len(seen), agents*each)
		}
	})
}

// BenchmarkSignedWrites measures a signed message or mark over HTTP on
// loopback, end to end (sign, send, verify, store), from 32 concurrent
// clients, and reports p50 and p99 latency beside ns/op (throughput).
func BenchmarkSignedWrites(b *testing.B) {
	for _, kind := range []string{"sqlite", "postgres"} {
		b.Run(kind, func(b *testing.B) {
			tb := startBeach(b, kind, func(c *Config) { c.AddrPerMinute, c.AgentPerMinute = -1, -1 })
			ctx := context.Background()
			to, _ := identity.Generate()
			var mu sync.Mutex
			var lat []time.Duration
			b.SetParallelism(16) // 2 cores × 16 = 32 clients
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				_, c := newAgent(b, tb)
				var mine []time.Duration
				for i := 0; pb.Next(); i++ {
					t0 := time.Now()
					var err error
					if i%2 == 0 {
						_, err = c.Send(ctx, beach.Message{To: to.Agent(), Type: beach.TypeGeneral, Content: "bench"})
					} else {
						_, err = c.Mark(ctx, fmt.Sprint("https://bench.example/", i), "bench")
					}
					if err != nil {
						b.Error(err)
						return
					}
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
			b.StopTimer()
			if len(lat) == 0 {
				return
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
