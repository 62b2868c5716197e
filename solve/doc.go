// Package solve is the SOLVE kernel (specs/solve-kernel-boot-spec.md) as
// a library: its methods do what the solve command does, taking plain
// options and returning plain results with JSON tags.
//
//	k, err := solve.Open(ctx, "kernel.db")                      // or a postgres:// URL
//	p, err := k.Plan(ctx, client, solve.PlanRequest{Goal: …})    // solve plan
//	r, err := solve.Check(ctx, "plan.json", solve.CheckOptions{}) // solve check
//	res, err := k.Run(ctx, solve.RunRequest{Goal: …}, opts)      // solve run
//	res, err = k.Resume(ctx, "", opts)                           // solve resume
//	st, err := k.Status(ctx, res.RootID)                         // solve status
//
// A value the kernel cannot take is an OptionError naming the field.
// docs/solve.md is the guide; docs/design/solve.md says how the packages
// beneath this one are put together.
package solve
