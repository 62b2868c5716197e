package memory

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmkernels/kernels/lumen/internal/dayfilestest"
)

// fixture is one instance's memory with 100,000 memories, built once per
// test binary in a temporary directory (removed when the process ends).
var fixture struct {
	once  sync.Once
	dir   string
	store *Store
	err   error
	build time.Duration
}

// vocabulary makes varied, realistic-length texts: a few hundred common
// words and a long tail of rarer ones.
func vocabulary(r *rand.Rand) []string {
	common := strings.Fields(`the user asked about weather music cats coffee books travel code python golang memory value goal
		skill honesty curiosity kindness learn explore question answer reply chat plan morning evening project garden
		friend family work rest walk rain sun tea bread river city mountain ocean story poem song idea dream fear hope`)
	words := append([]string(nil), common...)
	for i := 0; i < 5000; i++ {
		n := 4 + r.IntN(6)
		var b strings.Builder
		for j := 0; j < n; j++ {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
		words = append(words, b.String())
	}
	return words
}

func sentence(r *rand.Rand, words []string, n int) string {
	out := make([]string, n)
	for i := range out {
		if r.IntN(3) == 0 {
			out[i] = words[r.IntN(len(words))]
		} else {
			out[i] = words[r.IntN(60)]
		}
	}
	return strings.Join(out, " ")
}

func build100k(b *testing.B) *Store {
	fixture.once.Do(func() {
		start := time.Now()
		fixture.dir, fixture.err = os.MkdirTemp("", "lumen-bench-")
		if fixture.err != nil {
			return
		}
		r := rand.New(rand.NewPCG(1, 2))
		words := vocabulary(r)
		authors := []string{Self, Kernel, Goal, External}
		ts := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
		files := dayfilestest.New(fixture.dir)
		for i := 0; i < 100_000 && fixture.err == nil; i++ {
			ts = ts.Add(time.Duration(3+r.IntN(600)) * time.Second)
			m := Memory{Timestamp: ts, Author: authors[r.IntN(4)], Weight: 0.3 + 0.6*r.Float64(),
				Situation: sentence(r, words, 6), Description: sentence(r, words, 20+r.IntN(40))}
			fixture.err = files.Write(Day(ts), m)
		}
		if err := files.Close(); fixture.err != nil || err != nil {
			fixture.err = errors.Join(fixture.err, err)
			return
		}
		fixture.store, fixture.err = Open(fixture.dir, filepath.Join(fixture.dir, "index.db"), Options{})
		if fixture.err == nil {
			fixture.err = fixture.store.Sync(context.Background())
		}
		fixture.build = time.Since(start)
	})
	if fixture.err != nil {
		b.Fatal(fixture.err)
	}
	return fixture.store
}

func cleanupFixture() {
	if fixture.store != nil {
		fixture.store.Close()
	}
	if fixture.dir != "" {
		os.RemoveAll(fixture.dir)
	}
}

// BenchmarkRetrieve100k measures one retrieval (20 most recent ∪ top 10 by
// full-text relevance × weight, sync check included) over 100,000 memories.
// Target: p50 under 50 ms.
func BenchmarkRetrieve100k(b *testing.B) {
	s := build100k(b)
	b.Logf("fixture: 100,000 memories indexed in %s", fixture.build.Round(time.Millisecond))
	r := rand.New(rand.NewPCG(3, 4))
	words := vocabulary(rand.New(rand.NewPCG(1, 2)))
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		q := Query{Text: sentence(r, words, 12), Recent: 20, TopK: 10, Authors: []string{Self, Goal, External}}
		start := time.Now()
		res, err := s.Retrieve(ctx, q)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Entries) < 20 {
			b.Fatalf("retrieved %d memories, want at least the 20 recent", len(res.Entries))
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// BenchmarkAppend measures one locked append of a typical memory line.
func BenchmarkAppend(b *testing.B) {
	dir := b.TempDir()
	m := Memory{Timestamp: time.Date(2026, 2, 14, 9, 0, 0, 0, time.UTC), Author: Kernel, Weight: 0.3, Step: "think",
		Situation: "action loop, goal \"learn Go\"", Description: strings.Repeat("loaded soul, values, goals and 24 memories; ", 4)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := appendLine(dir, m); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

func ExampleStore_Retrieve() {
	dir, _ := os.MkdirTemp("", "lumen-example-")
	defer os.RemoveAll(dir)
	s, _ := Open(dir, filepath.Join(dir, "index.db"), Options{})
	defer s.Close()
	t := time.Date(2026, 2, 14, 9, 0, 0, 0, time.UTC)
	s.Append(Memory{Timestamp: t, Author: External, Weight: 0.8, Description: "my cat is called Miso"})
	s.Append(Memory{Timestamp: t.Add(time.Minute), Author: External, Weight: 0.8, Description: "it rained today"})
	r, _ := s.Retrieve(context.Background(), Query{Text: "the cat", Recent: 1, TopK: 1})
	for _, e := range r.Entries {
		fmt.Println(e.Description)
	}
	// Output:
	// my cat is called Miso
	// it rained today
}

// agedFixture is an aged instance of 100,000 memories over two years with
// a decay pass every six hours (2,920 passes), written once per test
// binary.
var agedFixture struct {
	once sync.Once
	dir  string
	err  error
}

func buildAged100k(b *testing.B) string {
	agedFixture.once.Do(func() {
		agedFixture.dir, agedFixture.err = os.MkdirTemp("", "lumen-aged-")
		if agedFixture.err == nil {
			_, agedFixture.err = writeAged(agedFixture.dir, aged{memories: 100_000, start: time.Date(2024, 11, 1, 0, 0, 0, 0, time.UTC),
				span: 2 * 365 * 24 * time.Hour, seed: 7})
		}
	})
	if agedFixture.err != nil {
		b.Fatal(agedFixture.err)
	}
	return agedFixture.dir
}

// BenchmarkRebuildAged100k rebuilds the index of the aged instance from
// its files: 100,000 memories, two years of six-hourly decay passes, steps
// using earlier memories. Target: under 10 s on the project's 2-core VM.
func BenchmarkRebuildAged100k(b *testing.B) {
	dir := buildAged100k(b)
	ctx := context.Background()
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		index := filepath.Join(b.TempDir(), "index.db")
		s, err := Open(dir, index, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Rebuild(ctx); err != nil {
			b.Fatal(err)
		}
		if n, err := s.Count(ctx, Filter{}); err != nil || n != 100_000+2*365*4 {
			b.Fatalf("indexed %d memories, %v", n, err)
		}
		s.Close()
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/rebuild")
	b.ReportMetric((cpuTime()-cpu).Seconds()/float64(b.N), "cpu-s/rebuild")
}
