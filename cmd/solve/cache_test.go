package main_test

import (
	"math"
	"strings"
	"testing"
)

// A run on a model whose minimum cacheable length the shared prompt
// reaches (Sonnet 4.5) reads most of its input from the fake API's
// simulated prompt cache; the ledger holds what the fake billed, cache
// writes at 1.25× and reads at 0.1× input; `status --json`, `status` and
// the run's last lines show the share. With --no-cache no breakpoint is
// sent, nothing is read from the cache, and the same run costs more.
// (--verbose and --quiet are checked on the way.)
func TestARunReadsThePromptCacheAndPaysForIt(t *testing.T) {
	t.Parallel()
	spent := map[bool]float64{}
	for _, noCache := range []bool{false, true} {
		api := newFakeAPI(t, 1, eightSteps()...)
		dir := t.TempDir()
		args := []string{"run", eightGoal, "--model", "claude-sonnet-4-5", "--budget", "5", "--time", "1h", "--verbose"}
		if noCache {
			args = append(args[:len(args)-1], "--no-cache", "--quiet")
		}
		r := api.run(t, dir, args...)
		if r.code != 0 {
			t.Fatalf("no-cache %v: exit %d\n%s\n%s", noCache, r.code, r.stdout, r.stderr)
		}
		calls, billed := api.served(t)
		_, paid := overdrawn(t, dir)
		if math.Abs(paid-billed) > 1e-9 {
			t.Errorf("no-cache %v: the ledger says $%.6f, the fake API billed $%.6f for %d calls", noCache, paid, billed, calls)
		}
		st := statusJSON(t, dir)
		written := 0
		for _, rec := range api.api.Received() {
			if rec.Request == nil {
				continue
			}
			for _, s := range rec.Request.System {
				if s.CacheControl != nil {
					written++
				}
			}
		}
		switch {
		case noCache && (written != 0 || st.CacheReadTokens != 0 || st.CacheReadShare != 0):
			t.Errorf("--no-cache: %d breakpoints sent, %d tokens read from the cache", written, st.CacheReadTokens)
		case !noCache && (written != calls || st.CacheReadShare < 0.5 || st.CacheWriteTokens == 0):
			t.Errorf("%d breakpoints in %d calls; status: %d written, %d read, share %.2f (want at least half read)", written, calls, st.CacheWriteTokens, st.CacheReadTokens, st.CacheReadShare)
		}
		if st.LLMCalls != calls || st.InputTokens+st.CacheReadTokens+st.CacheWriteTokens == 0 || st.OutputTokens == 0 {
			t.Errorf("status: %d calls (the fake served %d), tokens %+v", st.LLMCalls, calls, st)
		}
		share := "% of input from cache"
		if !strings.Contains(r.stdout, share) || !strings.Contains(runSolve(t, dir, "status", st.RootID).stdout, share) {
			t.Errorf("no cache share in the run's cost line or status:\n%s", r.stdout)
		}
		// --verbose: the live view with a line per answer; --quiet: none.
		switch {
		case !noCache && (!strings.Contains(r.stderr, share) || strings.Count(r.stderr, "solve: received from claude-sonnet-4-5") != calls):
			t.Errorf("--verbose: no share in the live view, or not a line per answer:\n%s", r.stderr)
		case noCache && strings.Contains(r.stderr, "solve: "):
			t.Errorf("--quiet: progress lines written:\n%s", r.stderr)
		}
		spent[noCache] = paid
	}
	if spent[false] >= spent[true] {
		t.Errorf("the cached run cost $%.6f, the same run without cache $%.6f", spent[false], spent[true])
	}
}
