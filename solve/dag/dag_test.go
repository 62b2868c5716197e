package dag

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func build(t *testing.T, spec map[string][]string, order ...string) *Graph {
	t.Helper()
	deps := make([][]string, len(order))
	for i, id := range order {
		deps[i] = spec[id]
	}
	g, vs := Build(order, deps)
	if vs != nil {
		t.Fatalf("unexpected violations: %v", vs)
	}
	return g
}

func kinds(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Kind)
	}
	return out
}

func TestBuildReportsDanglingReferenceWithTheMissingID(t *testing.T) {
	_, vs := Build([]string{"t1", "t2"}, [][]string{nil, {"t1", "t12"}})
	if len(vs) != 1 || vs[0].Kind != KindDangling || !strings.Contains(vs[0].Message, `t2 depends on "t12"`) {
		t.Fatalf("violations = %+v", vs)
	}
}

func TestBuildQuotesTheCyclePath(t *testing.T) {
	ids := []string{"t1", "t2", "t3", "t4", "t5"}
	deps := [][]string{nil, {"t1"}, {"t2", "t5"}, {"t3"}, {"t3"}}
	_, vs := Build(ids, deps)
	var cyc *Violation
	for i := range vs {
		if vs[i].Kind == KindCycle {
			cyc = &vs[i]
		}
	}
	if cyc == nil {
		t.Fatalf("no cycle reported: %+v", vs)
	}
	// t3 waits for t5 which waits for t3: edges run t3 → t5 → t3.
	if got := strings.Join(cyc.Path, " → "); got != "t3 → t5 → t3" {
		t.Fatalf("cycle path = %q, want t3 → t5 → t3", got)
	}
	if !strings.Contains(cyc.Message, "cycle: t3 → t5 → t3") {
		t.Fatalf("message = %q", cyc.Message)
	}
}

func TestBuildReportsEveryIndependentCycle(t *testing.T) {
	ids := []string{"a", "b", "c", "d", "e"}
	deps := [][]string{{"b"}, {"a"}, {"d"}, {"c"}, {"a", "c"}}
	_, vs := Build(ids, deps)
	n := 0
	for _, v := range vs {
		if v.Kind == KindCycle {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("want 2 cycles, got %+v", vs)
	}
}

func TestBuildRejectsSelfDependencyDuplicatesAndSeveralExits(t *testing.T) {
	_, vs := Build([]string{"a", "a", "b"}, [][]string{nil, nil, {"b"}})
	got := kinds(vs)
	for _, want := range []string{KindDuplicate, KindSelf} {
		if !slices.Contains(got, want) {
			t.Errorf("missing %s in %v", want, got)
		}
	}
	_, vs = Build([]string{"a", "b", "c"}, [][]string{nil, {"a"}, {"a"}})
	if len(vs) != 1 || vs[0].Kind != KindExits || !strings.Contains(vs[0].Message, "b, c") {
		t.Fatalf("violations = %+v", vs)
	}
}

func TestBuildRejectsAPlanWithNoEntry(t *testing.T) {
	_, vs := Build([]string{"a", "b"}, [][]string{{"b"}, {"a"}})
	if !slices.Contains(kinds(vs), KindNoEntry) || !slices.Contains(kinds(vs), KindCycle) {
		t.Fatalf("violations = %+v", vs)
	}
	_, vs = Build(nil, nil)
	if len(vs) != 1 || vs[0].Kind != KindEmpty {
		t.Fatalf("violations = %+v", vs)
	}
}

// The textbook network: a(3) → b(2) → d(4); a → c(4) → d; c → e(1); d, e → f(2).
func textbook(t *testing.T) (*Graph, []float64) {
	g := build(t, map[string][]string{"b": {"a"}, "c": {"a"}, "d": {"b", "c"}, "e": {"c"}, "f": {"d", "e"}},
		"a", "b", "c", "d", "e", "f")
	return g, []float64{3, 2, 4, 4, 1, 2}
}

func TestScheduleComputesEarlyLateTimesAndFloats(t *testing.T) {
	g, dur := textbook(t)
	s := g.Schedule(dur)
	if s.Length != 13 {
		t.Fatalf("length = %v, want 13", s.Length)
	}
	want := map[string][6]float64{ // ES EF LS LF TF FF
		"a": {0, 3, 0, 3, 0, 0},
		"b": {3, 5, 5, 7, 2, 2},
		"c": {3, 7, 3, 7, 0, 0},
		"d": {7, 11, 7, 11, 0, 0},
		"e": {7, 8, 10, 11, 3, 3},
		"f": {11, 13, 11, 13, 0, 0},
	}
	for i, id := range g.IDs {
		w := want[id]
		got := [6]float64{s.ES[i], s.EF[i], s.LS[i], s.LF[i], s.TotalFloat[i], s.FreeFloat[i]}
		if got != w {
			t.Errorf("%s: ES EF LS LF TF FF = %v, want %v", id, got, w)
		}
		if s.Critical[i] != (w[4] == 0) {
			t.Errorf("%s: critical = %v", id, s.Critical[i])
		}
	}
}

func TestFreeFloatDiffersFromTotalFloatWhenASuccessorHasFloat(t *testing.T) {
	// a(1) → b(1) → d(1); c(5) → d. a and b share float 4, but a's free float is 0.
	g := build(t, map[string][]string{"b": {"a"}, "d": {"b", "c"}}, "a", "b", "c", "d")
	s := g.Schedule([]float64{1, 1, 5, 1})
	if s.TotalFloat[0] != 3 || s.FreeFloat[0] != 0 || s.FreeFloat[1] != 3 {
		t.Fatalf("a TF=%v FF=%v, b FF=%v; want 3, 0, 3", s.TotalFloat[0], s.FreeFloat[0], s.FreeFloat[1])
	}
}

func TestCriticalPathsListsEveryTiedPath(t *testing.T) {
	g, dur := textbook(t)
	dur[1] = 4 // b now ties with c: a→b→d→f and a→c→d→f both take 13
	s := g.Schedule(dur)
	paths, count := g.CriticalPaths(s, 10)
	if count != 2 || len(paths) != 2 {
		t.Fatalf("count %v, paths %v", count, paths)
	}
	names := func(p []int) string {
		var out []string
		for _, v := range p {
			out = append(out, g.IDs[v])
		}
		return strings.Join(out, ">")
	}
	if names(paths[0]) != "a>b>d>f" || names(paths[1]) != "a>c>d>f" {
		t.Fatalf("paths = %s, %s", names(paths[0]), names(paths[1]))
	}
}

func TestCriticalPathTiesSurviveFractionalRounding(t *testing.T) {
	// 0.1+0.2 and 0.3 differ in float64; within tolerance both paths are critical.
	g := build(t, map[string][]string{"b": {"a"}, "d": {"b", "c"}}, "a", "b", "c", "d")
	s := g.Schedule([]float64{0.1, 0.2, 0.3, 1})
	if !s.Critical[0] || !s.Critical[1] || !s.Critical[2] {
		t.Fatalf("critical = %v (floats %v)", s.Critical, s.TotalFloat)
	}
	if _, count := g.CriticalPaths(s, 10); count != 2 {
		t.Fatalf("count = %v, want 2", count)
	}
}

func TestCriticalPathCountSaturatesOnHugeTies(t *testing.T) {
	// 1100 diamonds in series: 2^1100 equal paths.
	var ids []string
	deps := [][]string{}
	prev := ""
	for i := range 1100 {
		a, b, j := "a"+strconv.Itoa(i), "b"+strconv.Itoa(i), "j"+strconv.Itoa(i)
		var d []string
		if prev != "" {
			d = []string{prev}
		}
		ids = append(ids, a, b, j)
		deps = append(deps, d, d, []string{a, b})
		prev = j
	}
	g, vs := Build(ids, deps)
	if vs != nil {
		t.Fatal(vs)
	}
	dur := make([]float64, len(ids))
	for i := range dur {
		dur[i] = 1
	}
	paths, count := g.CriticalPaths(g.Schedule(dur), 5)
	if len(paths) != 5 || !math.IsInf(count, 1) {
		t.Fatalf("paths %d, count %v", len(paths), count)
	}
}

func TestWavesGroupByLongestDependencyChain(t *testing.T) {
	g, _ := textbook(t)
	waves := g.Waves()
	var got []string
	for _, w := range waves {
		var names []string
		for _, v := range w {
			names = append(names, g.IDs[v])
		}
		got = append(got, strings.Join(names, ","))
	}
	if strings.Join(got, " | ") != "a | b,c | d,e | f" {
		t.Fatalf("waves = %v", got)
	}
}

func TestLongestMatchesSchedule(t *testing.T) {
	g, dur := textbook(t)
	if l := g.Longest(dur, nil); l != g.Schedule(dur).Length {
		t.Fatalf("Longest = %v", l)
	}
}

func TestRedundantEdgesAreThoseImpliedByAnotherPath(t *testing.T) {
	// a → b → c, a → c (implied), c → d, b → d (implied), a → d (implied)
	g, vs := Build([]string{"a", "b", "c", "d"}, [][]string{nil, {"a"}, {"a", "b"}, {"c", "b", "a"}})
	if len(vs) > 0 {
		t.Fatal(vs)
	}
	r := g.Redundant()
	if len(r[0]) != 0 || len(r[1]) != 0 || !r[2][0] || r[2][1] || r[3][2] || !r[3][1] || !r[3][0] {
		t.Fatalf("redundant = %v", r)
	}
}
