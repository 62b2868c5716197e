// Package dag is the pure graph arithmetic of a task plan: validation with
// exact violations, topological order, the critical path method (ES, EF, LS,
// LF, total and free float, every critical path on ties) and parallel waves.
// It knows nothing about costs, LLMs or storage.
package dag

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Violation kinds.
const (
	KindEmpty     = "empty"
	KindEmptyID   = "empty_id"
	KindDuplicate = "duplicate_id"
	KindDangling  = "dangling_reference"
	KindSelf      = "self_dependency"
	KindCycle     = "cycle"
	KindNoEntry   = "no_entry"
	KindExits     = "several_exits"
)

// Violation is one reason a task list is not a valid plan DAG. Message is
// written to be quoted back to the model that produced the list.
type Violation struct {
	Kind    string   `json:"kind"`
	Message string   `json:"message"`
	Path    []string `json:"path,omitempty"` // the cycle, first id repeated at the end
}

// Graph is a validated DAG over nodes 0..n-1, in the caller's order. Every
// node reaches the single exit node.
type Graph struct {
	IDs   []string
	Preds [][]int
	Succs [][]int
	Order []int // a topological order; stable for a given input
	Exit  int
}

// Build checks ids and their dependency lists (deps[i] are the ids node i
// depends on) and returns the graph, or every violation found: empty or
// duplicate ids, references to unknown ids, self-dependencies, each cycle
// with its path, no entry node, and more than one exit node (a node nothing
// depends on), since then no exit is reached by all others. Repeated
// entries in one dependency list count once.
func Build(ids []string, deps [][]string) (*Graph, []Violation) {
	n := len(ids)
	if n == 0 {
		return nil, []Violation{{Kind: KindEmpty, Message: "the plan has no tasks"}}
	}
	var vs []Violation
	index := make(map[string]int, n)
	for i, id := range ids {
		if strings.TrimSpace(id) == "" {
			vs = append(vs, Violation{Kind: KindEmptyID, Message: fmt.Sprintf("task at position %d has an empty id", i+1)})
			continue
		}
		if j, dup := index[id]; dup {
			vs = append(vs, Violation{Kind: KindDuplicate, Message: fmt.Sprintf("id %q is used by two tasks (positions %d and %d); ids must be unique", id, j+1, i+1)})
			continue
		}
		index[id] = i
	}
	g := &Graph{IDs: ids, Preds: make([][]int, n), Succs: make([][]int, n)}
	for i := range n {
		if i >= len(deps) {
			continue
		}
		seen := map[int]bool{}
		for _, d := range deps[i] {
			j, ok := index[d]
			switch {
			case !ok:
				vs = append(vs, Violation{Kind: KindDangling, Message: fmt.Sprintf("%s depends on %q, which is not a task id (ids: %s)", label(ids, i), d, idList(ids))})
			case j == i:
				vs = append(vs, Violation{Kind: KindSelf, Message: fmt.Sprintf("%s depends on itself", label(ids, i))})
			case !seen[j]:
				seen[j] = true
				g.Preds[i] = append(g.Preds[i], j)
				g.Succs[j] = append(g.Succs[j], i)
			}
		}
	}
	g.Order = kahn(g)
	acyclic := len(g.Order) == n
	if !acyclic {
		for _, cyc := range cycles(g) {
			path := make([]string, len(cyc))
			for k, v := range cyc {
				path[k] = ids[v]
			}
			vs = append(vs, Violation{Kind: KindCycle, Path: path,
				Message: "cycle: " + strings.Join(path, " → ") + " (a task cannot wait, even indirectly, for itself; remove one of these dependencies)"})
		}
	}
	var entries, exits []int
	for i := range n {
		if len(g.Preds[i]) == 0 {
			entries = append(entries, i)
		}
		if len(g.Succs[i]) == 0 {
			exits = append(exits, i)
		}
	}
	if len(entries) == 0 {
		vs = append(vs, Violation{Kind: KindNoEntry, Message: "no task is free of dependencies, so the plan has no entry task where work can start"})
	}
	if acyclic && len(exits) > 1 {
		names := make([]string, len(exits))
		for k, v := range exits {
			names[k] = ids[v]
		}
		vs = append(vs, Violation{Kind: KindExits, Message: fmt.Sprintf("%d tasks end the plan (nothing depends on them): %s; no single exit task is reached by all others, so add a final task that depends on all of them",
			len(exits), strings.Join(names, ", "))})
	}
	if len(vs) > 0 {
		return nil, vs
	}
	g.Exit = exits[0]
	return g, nil
}

func label(ids []string, i int) string {
	if ids[i] == "" {
		return fmt.Sprintf("task at position %d", i+1)
	}
	return ids[i]
}

func idList(ids []string) string {
	const max = 12
	if len(ids) <= max {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:max], ", ") + fmt.Sprintf(", … %d more", len(ids)-max)
}

// kahn returns a topological order of the nodes it can order; fewer than n
// means a cycle. Ready nodes are taken in index order.
func kahn(g *Graph) []int {
	n := len(g.IDs)
	indeg := make([]int, n)
	for i := range n {
		indeg[i] = len(g.Preds[i])
	}
	order := make([]int, 0, n)
	for i := range n {
		if indeg[i] == 0 {
			order = append(order, i)
		}
	}
	for k := 0; k < len(order); k++ {
		for _, s := range g.Succs[order[k]] {
			if indeg[s]--; indeg[s] == 0 {
				order = append(order, s)
			}
		}
	}
	return order
}

// cycles returns one cycle per strongly connected component with more than
// one node, each starting and ending at the component's first node.
func cycles(g *Graph) [][]int {
	n := len(g.IDs)
	comp := tarjan(g)
	members := map[int][]int{}
	for v := range n {
		members[comp[v]] = append(members[comp[v]], v)
	}
	var out [][]int
	seen := map[int]bool{}
	for v := range n {
		c := comp[v]
		if seen[c] || len(members[c]) < 2 {
			continue
		}
		seen[c] = true
		out = append(out, cycleFrom(g, v, comp))
	}
	return out
}

// cycleFrom finds a shortest cycle through start inside its component (BFS).
func cycleFrom(g *Graph, start int, comp []int) []int {
	prev := map[int]int{start: -1}
	queue := []int{start}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, s := range g.Succs[u] {
			if comp[s] != comp[start] {
				continue
			}
			if s == start {
				path := []int{start}
				for w := u; w != start; w = prev[w] {
					path = append(path, w)
				}
				slices.Reverse(path[1:])
				return append(path, start)
			}
			if _, ok := prev[s]; !ok {
				prev[s] = u
				queue = append(queue, s)
			}
		}
	}
	return []int{start, start}
}

// tarjan labels strongly connected components, iteratively.
func tarjan(g *Graph) []int {
	n := len(g.IDs)
	index := make([]int, n)
	low := make([]int, n)
	comp := make([]int, n)
	on := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	next, ncomp := 0, 0
	type frame struct{ v, edge int }
	for root := range n {
		if index[root] >= 0 {
			continue
		}
		call := []frame{{root, 0}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		on[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			if f.edge < len(g.Succs[f.v]) {
				w := g.Succs[f.v][f.edge]
				f.edge++
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					on[w] = true
					call = append(call, frame{w, 0})
				} else if on[w] {
					low[f.v] = min(low[f.v], index[w])
				}
				continue
			}
			v := f.v
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].v
				low[p] = min(low[p], low[v])
			}
			if low[v] == index[v] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					on[w] = false
					comp[w] = ncomp
					if w == v {
						break
					}
				}
				ncomp++
			}
		}
	}
	return comp
}

// Schedule is the critical path method's result for one set of durations.
type Schedule struct {
	Length     float64   // project duration: the longest path
	ES, EF     []float64 // earliest start and finish
	LS, LF     []float64 // latest start and finish that keep Length
	TotalFloat []float64 // LS − ES
	FreeFloat  []float64 // min ES of successors − EF (Length − EF for the exit)
	Critical   []bool    // total float within Tolerance of zero
	Tolerance  float64   // 1e-9 × max(1, Length)
}

// Tolerance is the slack within which two times count as equal for a
// schedule of the given length.
func Tolerance(length float64) float64 { return 1e-9 * math.Max(1, math.Abs(length)) }

// Schedule runs the forward and backward passes over dur (one duration per
// node).
func (g *Graph) Schedule(dur []float64) Schedule {
	n := len(g.IDs)
	s := Schedule{ES: make([]float64, n), EF: make([]float64, n), LS: make([]float64, n), LF: make([]float64, n),
		TotalFloat: make([]float64, n), FreeFloat: make([]float64, n), Critical: make([]bool, n)}
	for _, v := range g.Order {
		es := 0.0
		for _, p := range g.Preds[v] {
			es = math.Max(es, s.EF[p])
		}
		s.ES[v], s.EF[v] = es, es+dur[v]
		s.Length = math.Max(s.Length, s.EF[v])
	}
	s.Tolerance = Tolerance(s.Length)
	for k := n - 1; k >= 0; k-- {
		v := g.Order[k]
		lf, ff := s.Length, s.Length-s.EF[v]
		if len(g.Succs[v]) > 0 {
			lf, ff = math.Inf(1), math.Inf(1)
			for _, w := range g.Succs[v] {
				lf = math.Min(lf, s.LS[w])
				ff = math.Min(ff, s.ES[w]-s.EF[v])
			}
		}
		s.LF[v], s.LS[v] = lf, lf-dur[v]
		s.TotalFloat[v] = s.LS[v] - s.ES[v]
		s.FreeFloat[v] = ff
		s.Critical[v] = s.TotalFloat[v] <= s.Tolerance
	}
	return s
}

// Longest is the project duration alone: the forward pass without the
// rest, for searches that only need the length. ef is scratch space of
// length n (allocated when nil).
func (g *Graph) Longest(dur, ef []float64) float64 {
	if ef == nil {
		ef = make([]float64, len(g.IDs))
	}
	length := 0.0
	for _, v := range g.Order {
		es := 0.0
		for _, p := range g.Preds[v] {
			es = math.Max(es, ef[p])
		}
		ef[v] = es + dur[v]
		length = math.Max(length, ef[v])
	}
	return length
}

// CriticalPaths lists the critical paths of s (chains of critical nodes,
// each starting at time 0, each next node starting when the previous one
// finishes, the last finishing at Length), at most limit of them, in a
// stable order, and counts them all (the count saturates at +Inf).
func (g *Graph) CriticalPaths(s Schedule, limit int) (paths [][]int, count float64) {
	n := len(g.IDs)
	tight := func(u, v int) bool { return s.Critical[v] && math.Abs(s.EF[u]-s.ES[v]) <= s.Tolerance }
	isEnd := func(v int) bool {
		if math.Abs(s.EF[v]-s.Length) > s.Tolerance {
			return false
		}
		for _, w := range g.Succs[v] {
			if tight(v, w) {
				return false
			}
		}
		return true
	}
	// ways[v] = number of critical chains from v to an end.
	ways := make([]float64, n)
	for k := n - 1; k >= 0; k-- {
		v := g.Order[k]
		if !s.Critical[v] {
			continue
		}
		if isEnd(v) {
			ways[v] = 1
		}
		for _, w := range g.Succs[v] {
			if tight(v, w) {
				ways[v] += ways[w]
			}
		}
	}
	var starts []int
	for v := range n {
		if s.Critical[v] && s.ES[v] <= s.Tolerance {
			starts = append(starts, v)
			count += ways[v]
		}
	}
	var walk func(path []int)
	walk = func(path []int) {
		if len(paths) >= limit {
			return
		}
		v := path[len(path)-1]
		if isEnd(v) {
			paths = append(paths, slices.Clone(path))
		}
		succ := slices.Clone(g.Succs[v])
		slices.Sort(succ)
		for _, w := range succ {
			if tight(v, w) && ways[w] > 0 {
				walk(append(path, w))
			}
		}
	}
	for _, v := range starts {
		if ways[v] > 0 {
			walk([]int{v})
		}
	}
	return paths, count
}

// Waves groups nodes into parallel waves: wave 0 has no dependencies, wave
// k+1 depends on nothing later than wave k. Nodes in one wave can run at
// the same time. Each wave lists nodes in index order.
func (g *Graph) Waves() [][]int {
	n := len(g.IDs)
	level := make([]int, n)
	depth := 0
	for _, v := range g.Order {
		for _, p := range g.Preds[v] {
			level[v] = max(level[v], level[p]+1)
		}
		depth = max(depth, level[v]+1)
	}
	waves := make([][]int, depth)
	for v := range n {
		waves[level[v]] = append(waves[level[v]], v)
	}
	return waves
}

// Redundant reports, for each node, which of its predecessors are
// implied: u is redundant for v when u also reaches v through another
// predecessor. Dropping redundant edges (the transitive reduction) keeps
// every ordering and draws far fewer lines.
func (g *Graph) Redundant() []map[int]bool {
	n := len(g.IDs)
	words := (n + 63) / 64
	anc := make([][]uint64, n) // strict ancestors of each node
	for _, v := range g.Order {
		a := make([]uint64, words)
		for _, u := range g.Preds[v] {
			for k, x := range anc[u] {
				a[k] |= x
			}
			a[u/64] |= 1 << (u % 64)
		}
		anc[v] = a
	}
	out := make([]map[int]bool, n)
	for v := range n {
		for _, u := range g.Preds[v] {
			for _, w := range g.Preds[v] {
				if w != u && anc[w][u/64]&(1<<(u%64)) != 0 {
					if out[v] == nil {
						out[v] = map[int]bool{}
					}
					out[v][u] = true
					break
				}
			}
		}
	}
	return out
}
