package expr

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// FuzzParse: whatever the text (a model writes these), Parse returns an
// expression or an error naming the text, never panics; an expression
// keeps its source, lists its metrics sorted and once each, evaluates
// without error when every metric has a value and with an
// UnknownMetricError when one lacks it, renders balanced SMT-LIB, and when
// it claims to be antitone (a division by zero is the one error a full
// set of values may give), growing every metric never turns it from
// false to true.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"total_cost <= 500", "critical_path_hours <= 24 && p99_latency_ms < 500", "!(a > 1) || b == 2",
		"-(x - y) * 2 / z >= 0.5", "a <= 1 and not b != 3 or c < -4", "1 <= 2", "a +", "((a)", "a <= 1e309", "é <= 1", ""} {
		f.Add(s, 3.5)
	}
	f.Fuzz(func(t *testing.T, src string, x float64) {
		e, err := Parse(src)
		if err != nil {
			if !strings.Contains(err.Error(), "expression ") {
				t.Fatalf("Parse(%q): an error that does not say which expression: %v", src, err)
			}
			return
		}
		if e.String() != src {
			t.Fatalf("String() = %q, parsed %q", e.String(), src)
		}
		vars := e.Vars()
		if !slices.IsSorted(vars) || len(slices.Compact(slices.Clone(vars))) != len(vars) {
			t.Fatalf("Vars() = %q: not sorted and unique", vars)
		}
		if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > 1e6 {
			x = 1
		}
		at := func(v float64) map[string]float64 {
			m := map[string]float64{}
			for _, n := range vars {
				m[n] = v
			}
			return m
		}
		holds, err := e.Eval(at(x))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "division by zero in ") {
				t.Fatalf("%q with every metric at %v: %v", src, x, err)
			}
			return
		}
		if _, err := e.Slack(at(x)); err != nil {
			t.Fatalf("slack of %q: %v", src, err)
		}
		if len(vars) > 0 {
			var unknown *UnknownMetricError
			if _, err := e.Eval(map[string]float64{}); !errors.As(err, &unknown) {
				t.Fatalf("%q with no metric: %v", src, err)
			}
		}
		if s := e.SMT(func(n string) string { return "m_" + n }); strings.Count(s, "(") != strings.Count(s, ")") {
			t.Fatalf("SMT of %q is unbalanced: %s", src, s)
		}
		if e.Antitone() && !holds {
			if grown, err := e.Eval(at(x + 1)); err != nil || grown {
				t.Fatalf("%q is antitone, false at %v and %v at %v (%v)", src, x, grown, x+1, err)
			}
		}
	})
}
