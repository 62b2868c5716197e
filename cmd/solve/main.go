// Command solve runs the SOLVE planning kernel (docs/solve.md).
package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/internal/cli"
	"github.com/llmkernels/kernels/internal/provider"
	"github.com/llmkernels/kernels/solve"
)

// defaultModels are the planning models when --model is not given; the
// scripted provider meters its canned answers at the Anthropic default.
var defaultModels = map[string]string{
	provider.Anthropic: "claude-opus-4-6",
	provider.OpenAI:    "gpt-5",
	provider.Script:    "claude-opus-4-6",
}

func main() {
	app := cli.New("solve", "Turn a goal with hard constraints into a checked task DAG, and solve it",
		`Solve turns a goal with hard constraints into a constraint-checked task DAG with
budgets, critical path, walls and repairs, and runs the SOLVE loop that resolves,
verifies, builds tools and asks a human when it must.

Planning works: 'solve plan' extracts constraints, decomposes the goal into a task
DAG, does all the arithmetic itself (rollups, waterfall, critical path, verdicts,
walls), surveys alternatives and repairs by exact search; 'solve check' re-runs the
assertion framework on a plan file (docs/solve.md).

Not built yet in this version: the SOLVE loop (run, resume, status, hire).
Use 'solve ping' to check your provider set-up.`)
	app.Root.AddCommand(planCommand(app), checkCommand())
	app.Run()
}

func planCommand(app *cli.App) *cobra.Command {
	var (
		req     solve.Request
		budget  float64
		timeCap string
		out, db string
		smt     string
	)
	cmd := &cobra.Command{
		Use:   "plan GOAL",
		Short: "Plan a goal: constraints, task DAG, budgets, critical path, verdicts, walls, surveys and repair",
		Long: `Plan a goal in five stages: constraint extraction (LLM), decomposition into a
task DAG (LLM; the kernel validates it and re-asks with the exact violations),
kernel arithmetic (cost rollup with PERT, budget waterfall, critical path with
ES/EF/LS/LF and floats, waves, SAT/TIGHT/UNSAT verdicts, walls), approach survey
(LLM) for low-confidence and wall tasks, and repair by exact search at least
total cost, or an unsat core when nothing works.

Verdicts: SAT holds at high estimates; TIGHT holds at mid but not at high;
UNSAT fails at mid. The kernel never uses a number the model computed.

--out FILE writes FILE (the plan JSON, docs/solve-plan-format.md) and, beside it
with the same base name, .md (report), .mmd (Mermaid DAG) and .svg (Gantt chart).
Everything is also stored in kernel.db (--db). Progress lines go to stderr.`,
		Example: `  solve plan "Build an autonomous SWE agent achieving 80% on SWE-bench Lite, within 24h, for <$500 compute." --out swe.json
  solve plan "Port the billing service to Go" --budget 300 --time 16h --constraint "no downtime"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Goal = args[0]
			if cmd.Flags().Changed("budget") {
				req.BudgetUSD = &budget
			}
			if timeCap != "" {
				d, err := time.ParseDuration(timeCap)
				if err != nil {
					return fmt.Errorf("--time %q: %v; give a duration such as 24h or 90m", timeCap, err)
				}
				h := d.Hours()
				req.TimeHours = &h
			}
			switch smt {
			case "":
			case "z3":
				req.SMT = true
			default:
				return fmt.Errorf("--smt %q: the only solver is z3", smt)
			}
			client, err := app.Provider.Client(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			req.Model = app.Provider.Model
			if req.Model == "" {
				req.Model = defaultModels[app.Provider.Provider]
			}
			req.Progress = cmd.ErrOrStderr()
			k, err := solve.Open(cmd.Context(), db)
			if err != nil {
				return err
			}
			defer k.Close()
			p, err := k.Plan(cmd.Context(), client, req)
			if err != nil {
				return err
			}
			files, err := solve.WriteFiles(p, out)
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), solve.Summary(p, files))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&req.Constraints, "constraint", nil, "an extra explicit constraint in words (repeatable)")
	f.Float64Var(&budget, "budget", 0, "budget cap in USD; becomes the logic constraint total_cost <= BUDGET")
	f.StringVar(&timeCap, "time", "", "time cap (e.g. 24h, 90m); becomes the logic constraint critical_path_hours <= TIME")
	f.StringVar(&out, "out", "plan.json", "plan file; the report, Mermaid and SVG files take its base name (.md, .mmd, .svg)")
	f.StringVar(&db, "db", "kernel.db", "kernel database (SQLite) where nodes, constraints, attempts and logs are stored")
	f.DurationVar(&req.MaxWall, "max-wall", 10*time.Minute, "wall-clock cap for the whole planning run (0 = none)")
	f.IntVar(&req.Retries, "retries", 2, "re-asks, with the violations quoted, when the kernel rejects an answer (0 = none)")
	f.BoolVar(&req.LogRaw, "log-raw", false, "keep raw prompts and answers in the tier-3 logs (redacted by default)")
	f.StringVar(&smt, "smt", "", "cross-check feasibility and repair with an SMT solver: z3 (needs the z3 binary)")
	return cmd
}

func checkCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "check FILE",
		Short: "Run the assertion framework on a plan file, recomputing every figure from its tasks",
		Long: `Run the spec's six groups of assertions (constraint completeness, decomposition
validity, budget arithmetic, approach survey triggers, repair effectiveness,
critical path) on a plan file. Every figure is recomputed from the raw tasks,
constraints, surveys and repair choices, never read from the plan's own totals,
so a hand-edited plan fails. Prints PASS/FAIL with the numbers; exits 1 on any FAIL.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := solve.ReadPlan(args[0])
			if err != nil {
				return err
			}
			results := solve.Check(cmd.Context(), p)
			w := cmd.OutOrStdout()
			group := 0
			for _, r := range results {
				if r.Group != group {
					group = r.Group
					fmt.Fprintf(w, "%d %s\n", group, solve.CheckGroups[group])
				}
				status := "PASS"
				if !r.Pass {
					status = "FAIL"
				}
				fmt.Fprintf(w, "  %s %s %s: %s\n", status, r.ID, r.Name, r.Detail)
			}
			failed := solve.Failed(results)
			fmt.Fprintf(w, "%d checks: %d PASS, %d FAIL\n", len(results), len(results)-failed, failed)
			if failed > 0 {
				return fmt.Errorf("%s: %d of %d checks failed", args[0], failed, len(results))
			}
			return nil
		},
	}
}
