package planning

import (
	"encoding/json"
	"strings"
	"testing"
)

// Figures so large that the kernel's sums or squares overflow float64 are
// rejected as invalid (so the model is re-asked), never analysed: the
// total became +Inf, which passed "total_cost <= 400" and could not be
// written as JSON.
func TestAnalyzeRejectsFiguresThatWouldOverflow(t *testing.T) {
	p := fixture()
	p.Tasks[0].CostUSD = est(0, 1e308, 1e308)
	p.Tasks[1].CostUSD = est(0, 1e308, 1e308)
	a, err := Analyze(p.Tasks, p.Quantities, p.Constraints)
	problems, ok := errInvalid(err)
	if !ok || !strings.Contains(strings.Join(problems, "\n"), "a cost_usd.mid is 1e+308") {
		var c1 string
		if a != nil {
			c1 = verdictOf(a, "c1").Verdict
		}
		t.Fatalf("error %v; c1 %s", err, c1)
	}
	// An expression that overflows on ordinary figures is refused naming
	// the constraint, not written as ±Inf.
	p = fixture()
	p.Constraints[0].Payload.Expr = "total_cost * 1e300 * 1e300 <= 1"
	a, err = Analyze(p.Tasks, p.Quantities, p.Constraints)
	if err == nil {
		_, jerr := json.Marshal(a)
		t.Fatalf("analysed (c1 %s); marshal: %v", verdictOf(a, "c1").Verdict, jerr)
	}
	if !strings.Contains(err.Error(), "c1") || !strings.Contains(err.Error(), "finite") {
		t.Fatalf("error %v", err)
	}
}
