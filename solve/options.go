package solve

import (
	"math"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/solve/loop"
)

// The options the kernel checks before it writes anything: a value it
// cannot take is an OptionError naming the field (goal, budget_usd,
// time, workers, tmax, add_usd, add_seconds, network, tier, steps,
// rescue_after), so that a command can name its own flag for it.

// CheckPlanRequest refuses a planning request the kernel cannot take.
func CheckPlanRequest(req PlanRequest) error {
	switch {
	case strings.TrimSpace(req.Goal) == "":
		return option.Errorf("goal", "is empty: give the goal to plan, e.g. \"Build X within 24h for <$500\"")
	case req.TimeHours != nil && !(*req.TimeHours > 0 && !math.IsInf(*req.TimeHours, 0)):
		return option.Errorf("time", "%v: give a positive duration such as 24h", time.Duration(*req.TimeHours*float64(time.Hour)))
	case req.BudgetUSD != nil:
		return option.CheckUSD("budget_usd", *req.BudgetUSD, false, "give a positive amount in USD")
	}
	return nil
}

// CheckRunRequest refuses a run the kernel cannot start.
func CheckRunRequest(req RunRequest) error {
	if strings.TrimSpace(req.Goal) == "" {
		return option.Errorf("goal", "is empty: give the goal to solve, e.g. \"Add a Median function with tests\"")
	}
	if err := option.CheckUSD("budget_usd", req.BudgetUSD, false, "give a positive, finite budget in USD, e.g. 2"); err != nil {
		return err
	}
	switch {
	case req.Time <= 0:
		return option.Errorf("time", "%s: give a positive duration such as 30m", req.Time)
	case req.Workers < 0:
		return option.Errorf("workers", "%d: give at least 1 (nodes run in parallel up to it)", req.Workers)
	case req.TMax < 0:
		return option.Errorf("tmax", "%d: give at least 1 attempt per resolver before BUILD (default %d)", req.TMax, DefaultTMax)
	}
	// Whether a server's command may run is Run's question (Options.Sandbox).
	return loop.CheckMCP(req.MCP, true)
}

// CheckWorkers refuses a worker count for a resumed run (0 = as the run
// was started).
func CheckWorkers(workers int) error {
	if workers < 0 {
		return option.Errorf("workers", "%d: give at least 1 (0 = as the run was started)", workers)
	}
	return nil
}

// CheckHireAnswer refuses an answer whose amounts are negative, not
// finite or (money) above option.MaxUSD, or whose network allowance goes without a command.
func CheckHireAnswer(a HireAnswer) error {
	if err := option.CheckUSD("add_usd", a.AddUSD, true, "give a positive, finite amount in USD"); err != nil {
		return err
	}
	switch {
	case a.AddSeconds < 0 || math.IsInf(a.AddSeconds, 0) || math.IsNaN(a.AddSeconds):
		return option.Errorf("add_seconds", "%s: give a positive duration", time.Duration(a.AddSeconds*float64(time.Second)))
	case len(a.Network) > 0 && a.Command == "":
		return option.Errorf("network", "goes with a resolver command: it is what the command may reach")
	}
	return nil
}

// checkTier refuses a log tier other than 1, 2, 3 or 0 (all).
func checkTier(tier int) error {
	if tier < 0 || tier > 3 {
		return option.Errorf("tier", "%d: give 1, 2 or 3 (0 = all)", tier)
	}
	return nil
}
