package expr

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func mustParse(t *testing.T, s string) *Expr {
	t.Helper()
	e, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return e
}

func TestEvalComparesMetricsWithLimits(t *testing.T) {
	vars := map[string]float64{"total_cost": 580, "critical_path_hours": 21.5, "p99_latency_ms": 440}
	cases := map[string]bool{
		"total_cost <= 500": false,
		"total_cost < 600":  true,
		"500 >= total_cost": false,
		"critical_path_hours <= 24 && total_cost <= 600":  true,
		"critical_path_hours <= 20 || p99_latency_ms<500": true,
		"!(total_cost > 500)":                             false,
		"not (total_cost > 500) or total_cost == 580":     true,
		"total_cost + 12 * 30 <= 1000":                    true,
		"total_cost / 2 - 40 >= 250":                      true,
		"-total_cost < 0":                                 true,
		"critical_path_hours ≤ 24":                        true,
		"total_cost != 580":                               false,
		"1e3 > total_cost":                                true,
	}
	for src, want := range cases {
		got, err := mustParse(t, src).Eval(vars)
		if err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", src, got, err, want)
		}
	}
}

func TestEvalToleratesFloatRoundingAtTheLimit(t *testing.T) {
	e := mustParse(t, "total_cost <= 0.3")
	if ok, _ := e.Eval(map[string]float64{"total_cost": 0.1 + 0.2}); !ok {
		t.Fatal("0.1+0.2 <= 0.3 should hold within tolerance")
	}
	strict := mustParse(t, "total_cost < 0.3")
	if ok, _ := strict.Eval(map[string]float64{"total_cost": 0.1 + 0.2}); ok {
		t.Fatal("0.1+0.2 < 0.3 should not hold")
	}
}

// The tolerance is relative, so an infinite figure must not make it
// infinite too: +Inf <= 500 held (a plan whose sums overflowed was SAT).
func TestEvalDoesNotLetAnInfiniteFigurePass(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		src  string
		vars map[string]float64
		want bool
	}{
		{"total_cost <= 500", map[string]float64{"total_cost": inf}, false},
		{"total_cost < 500", map[string]float64{"total_cost": inf}, false},
		{"total_hours >= 40", map[string]float64{"total_hours": -inf}, false},
		{"total_cost == 500", map[string]float64{"total_cost": inf}, false},
		{"total_cost != 500", map[string]float64{"total_cost": inf}, true},
		{"total_cost <= 500", map[string]float64{"total_cost": math.NaN()}, false},
		{"total_cost >= 500", map[string]float64{"total_cost": inf}, true},
	} {
		if got, err := mustParse(t, tc.src).Eval(tc.vars); err != nil || got != tc.want {
			t.Errorf("%s with %v: %v %v; want %v", tc.src, tc.vars, got, err, tc.want)
		}
	}
}

func TestUnknownMetricIsANamedError(t *testing.T) {
	_, err := mustParse(t, "total_cost_usd <= 500").Eval(map[string]float64{"total_cost": 1})
	var u *UnknownMetricError
	if !errors.As(err, &u) || u.Name != "total_cost_usd" {
		t.Fatalf("err = %v", err)
	}
}

func TestParseErrorsSayWhereAndWhat(t *testing.T) {
	cases := map[string]string{
		"total_cost <= ":          "column 15: expected a number, metric name",
		"total_cost <= 500ms":     `"500m" is glued to a unit`,
		"total_cost = 500":        "compare with ==",
		"total_cost":              "is a number, not a condition",
		"total_cost + (a < b)":    "needs numbers",
		"a <= b <= c":             "chained comparison",
		"(total_cost <= 5":        `missing ")"`,
		"total_cost <= $500":      "unexpected character '$'",
		"a <= 1 && 2":             "joins conditions",
		"total_cost <= 500 extra": `unexpected "extra"`,
	}
	for src, want := range cases {
		_, err := Parse(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v; want error containing %q", src, err, want)
		}
	}
}

func TestSlackMeasuresTheOvershoot(t *testing.T) {
	vars := map[string]float64{"total_cost": 580, "critical_path_hours": 21.5}
	cases := map[string]float64{
		"total_cost <= 500":                              -80,
		"critical_path_hours <= 24":                      2.5,
		"total_cost <= 500 && critical_path_hours <= 24": -80,
		"total_cost <= 500 || critical_path_hours <= 24": 2.5,
		"!(total_cost <= 500)":                           80,
		"total_cost >= 600":                              -20,
		"total_cost + 10 * critical_path_hours <= 800":   5,
		"total_cost == 500":                              -80,
		"total_cost * 2 <= 1000":                         -160,
		"critical_path_hours / 4 <= total_cost / 8 - 60": 580.0/8 - 60 - 21.5/4,
	}
	for src, want := range cases {
		got, err := mustParse(t, src).Slack(vars)
		if err != nil || got != want {
			t.Errorf("slack(%s) = %v, %v; want %v", src, got, err, want)
		}
	}
}

func TestAntitoneOnlyWhenGrowingMetricsCanOnlyHurt(t *testing.T) {
	cases := map[string]bool{
		"total_cost <= 500":                          true,
		"500 > total_cost && critical_path_hours<24": true,
		"total_cost + 2 * hosting_usd_month <= 600":  true,
		"total_cost * -1 >= -500":                    true,
		"total_cost >= 100":                          false,
		"total_cost == 500":                          false,
		"total_cost * task_count <= 500":             false,
		"total_cost - total_hours <= 5":              false,
		"!(total_cost > 500)":                        true,
	}
	for src, want := range cases {
		if got := mustParse(t, src).Antitone(); got != want {
			t.Errorf("Antitone(%s) = %v, want %v", src, got, want)
		}
	}
}

func TestUpperLimitRecognisesSimpleCaps(t *testing.T) {
	for src, want := range map[string]float64{"total_cost <= 500": 500, "total_cost < 100": 100, "50 >= total_cost": 50, "total_cost <= 2 * 250": 500} {
		if l, ok := mustParse(t, src).UpperLimit("total_cost"); !ok || l != want {
			t.Errorf("UpperLimit(%s) = %v, %v", src, l, ok)
		}
	}
	for _, src := range []string{"total_cost >= 5", "total_hours <= 5", "total_cost <= 5 && total_hours <= 3", "total_cost <= total_hours"} {
		if _, ok := mustParse(t, src).UpperLimit("total_cost"); ok {
			t.Errorf("UpperLimit(%s) should not be found", src)
		}
	}
}

func TestSMTRendersPrefixTerms(t *testing.T) {
	e := mustParse(t, "total_cost <= 500 && !(p99_latency_ms > -2.5) || a != 1")
	got := e.SMT(func(s string) string { return "m_" + s })
	want := "(or (and (<= m_total_cost 500.0) (not (> m_p99_latency_ms (- 2.5)))) (not (= m_a 1.0)))"
	if got != want {
		t.Fatalf("SMT = %s\nwant %s", got, want)
	}
	if v := mustParse(t, "a <= 1").Vars(); len(v) != 1 || v[0] != "a" {
		t.Fatalf("Vars = %v", v)
	}
}
