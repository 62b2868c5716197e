package option

// MaxUSD is the largest amount of money a kernel takes, as a cap, a
// budget or an addition to one: $1,000,000. It is far above any LLM spend
// a person means, and it keeps sums of amounts finite and short to print
// (1e308 would print 309 digits, and two of them add to +Inf).
const MaxUSD = 1_000_000

// CheckUSD refuses an amount of money for field that is not a number, is
// infinite, negative, above MaxUSD, or 0 when zero is false: an Error
// whose problem is the value, then give (what to give instead).
func CheckUSD(field string, usd float64, zero bool, give string) error {
	// NaN fails every comparison, so it is caught by the first test.
	if !(usd >= 0 && usd <= MaxUSD) || (usd == 0 && !zero) {
		return Errorf(field, "%v: %s (at most $1,000,000)", usd, give)
	}
	return nil
}
