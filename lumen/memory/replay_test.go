package memory

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// eager replays a log the slow, obvious way: each decay pass updates every
// earlier memory. The index's one-pass replay must agree with it.
type eager struct {
	floor, strengthen float64
	lastPass          float64
	mems              []*eagerMem
	byID              map[string]*eagerMem
}

type eagerMem struct {
	id                          string
	importance, weight, touched float64
}

func (e *eager) add(m Memory) {
	unix := float64(m.Timestamp.UnixNano()) / 1e9
	mem := &eagerMem{id: m.ID, importance: m.Weight, weight: m.Weight, touched: unix}
	for id, v := range m.Judged {
		if t := e.byID[id]; t != nil {
			t.weight = clamp(t.weight+v-t.importance, e.floor, 1)
			t.importance = v
		}
	}
	for _, id := range m.Used {
		if t := e.byID[id]; t != nil {
			t.weight = math.Min(1, t.weight+e.strengthen)
			t.touched = math.Max(t.touched, unix)
		}
	}
	if m.Decay != nil {
		h := m.Decay.HalfLifeHours * 3600
		for _, t := range e.mems {
			ref := math.Max(t.touched, e.lastPass)
			if unix > ref && t.weight > e.floor {
				t.weight = math.Max(e.floor, t.weight*math.Pow(0.5, (unix-ref)/h))
			}
		}
		e.lastPass = math.Max(e.lastPass, unix)
	}
	e.mems = append(e.mems, mem)
	e.byID[m.ID] = mem
}

func TestOnePassReplayEqualsDecayingEveryMemoryAtEveryPass(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		r := rand.New(rand.NewPCG(seed, 99))
		dir := t.TempDir()
		ctx := context.Background()
		s := openStore(t, dir, Options{})
		type logged struct {
			m     Memory
			order int
		}
		var log []logged
		var ids []string
		ts := t0
		for i := 0; i < 400; i++ {
			ts = ts.Add(time.Duration(r.IntN(4*3600)) * time.Second)
			at := ts
			if r.IntN(15) == 0 {
				at = ts.Add(-time.Duration(r.IntN(3*3600)) * time.Second) // a clock that lags
			}
			m := Memory{ID: NewID(at), Timestamp: at, Author: []string{Self, Kernel, Goal, External}[r.IntN(4)],
				Weight: r.Float64(), Description: "memory"}
			switch {
			case r.IntN(8) == 0:
				h := 168.0
				if seed == 4 && i > 200 {
					h = 24 // a changed half-life
				}
				m.Author, m.Step, m.Decay = Kernel, "maintain", &Decay{HalfLifeHours: h}
			case len(ids) > 0 && r.IntN(3) == 0:
				for j := 0; j < 1+r.IntN(5); j++ {
					m.Used = append(m.Used, ids[r.IntN(len(ids))])
				}
				if r.IntN(4) == 0 {
					m.Judged = map[string]float64{ids[r.IntN(len(ids))]: r.Float64()}
				}
			}
			if _, err := s.Append(m); err != nil {
				t.Fatal(err)
			}
			log = append(log, logged{m, i})
			ids = append(ids, m.ID)
			if r.IntN(20) == 0 {
				if err := s.Sync(ctx); err != nil { // incremental syncs along the way
					t.Fatal(err)
				}
			}
		}
		// The files' order: by day, then as appended.
		sort.SliceStable(log, func(i, j int) bool { return Day(log[i].m.Timestamp) < Day(log[j].m.Timestamp) })
		want := &eager{floor: 0.01, strengthen: 0.05, byID: map[string]*eagerMem{}}
		for _, l := range log {
			want.add(l.m)
		}
		check := func(how string) {
			got, err := s.List(ctx, Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want.mems) {
				t.Fatalf("seed %d %s: %d memories indexed, want %d", seed, how, len(got), len(want.mems))
			}
			for _, e := range got {
				w := want.byID[e.ID]
				if math.Abs(e.Current-w.weight) > 1e-9 {
					t.Fatalf("seed %d %s: memory %s weight %v, want %v", seed, how, e.ID, e.Current, w.weight)
				}
			}
		}
		check("incremental")
		if err := s.Rebuild(ctx); err != nil {
			t.Fatal(err)
		}
		check("rebuilt")
	}
}
