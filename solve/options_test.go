package solve

import (
	"errors"
	"math"
	"testing"
	"time"
)

// A budget, or an addition to one, that is not finite or is above
// option.MaxUSD is an OptionError on its field: sums of budgets stay
// finite and print short.
func TestMoneyOptionsAreFiniteAndBounded(t *testing.T) {
	for _, usd := range []float64{math.Inf(1), 1e308, 1_000_000.01, math.NaN()} {
		plan := CheckPlanRequest(PlanRequest{Goal: "g", BudgetUSD: &usd})
		run := CheckRunRequest(RunRequest{Goal: "g", BudgetUSD: usd, Time: time.Minute})
		hire := CheckHireAnswer(HireAnswer{AddUSD: usd})
		for _, c := range []struct {
			field string
			err   error
		}{{"budget_usd", plan}, {"budget_usd", run}, {"add_usd", hire}} {
			var e *OptionError
			if !errors.As(c.err, &e) || e.Field != c.field {
				t.Errorf("%v: %s: %v", usd, c.field, c.err)
			}
		}
	}
	max := 1_000_000.0
	if err := CheckRunRequest(RunRequest{Goal: "g", BudgetUSD: max, Time: time.Minute}); err != nil {
		t.Errorf("the cap itself: %v", err)
	}
}
