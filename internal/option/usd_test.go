package option

import (
	"errors"
	"math"
	"testing"
)

func TestCheckUSDTakesOnlyFiniteAmountsUpToTheCap(t *testing.T) {
	for _, tc := range []struct {
		usd  float64
		zero bool
		ok   bool
	}{
		{0, true, true}, {0, false, false}, {2, false, true}, {MaxUSD, false, true},
		{MaxUSD + 0.01, true, false}, {1e308, true, false}, {-0.01, true, false},
		{math.Inf(1), true, false}, {math.Inf(-1), true, false}, {math.NaN(), true, false},
	} {
		err := CheckUSD("max_cost", tc.usd, tc.zero, "give a cap")
		var e *Error
		if (err == nil) != tc.ok || (err != nil && (!errors.As(err, &e) || e.Field != "max_cost")) {
			t.Errorf("CheckUSD(%v, zero %v) = %v, want ok %v", tc.usd, tc.zero, err, tc.ok)
		}
	}
}
