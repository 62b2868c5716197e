package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/solve"
)

func evalCommand(app *cli.App) *cobra.Command {
	var (
		req      solve.PlanRequest
		outDir   string
		db       string
		solver   string
		examples bool
		asJSON   *bool
	)
	cmd := &cobra.Command{
		Use:   "eval [GOAL_FILE...]",
		Short: "Plan the spec's three examples (and any goal files) with the configured model and check every plan",
		Long: `Run the spec's v1 evaluation in one command: plan the three verification examples
(autonomous SWE agent, momentum trading strategy, document classification) and
every GOAL_FILE with the configured provider, write each plan into --out-dir,
and run the assertion framework (solve check) on it. Prints, per goal, each of
the six assertion groups' results, the logic verdicts before and after repair,
the LLM calls, tokens, cost and time, and a total; --json prints the same as one
JSON document. A goal that fails to plan is reported and the next one runs.
Exits 1 when a goal has no plan or an assertion fails.

A GOAL_FILE is the goal as plain text, or a .json file
{"name", "goal", "constraints": [...], "budget_usd", "time_hours"}.

This calls the model for real (a few calls per goal) unless --provider script is
given; the project's own tests run it only on scripted answers.`,
		Example: `  solve eval --out-dir eval
  solve eval migration.txt enclosure.json --examples=false --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var goals []solve.EvalGoal
			if examples {
				goals = append(goals, solve.Examples...)
			}
			for _, f := range args {
				g, err := readGoalFile(f)
				if err != nil {
					return cli.Usagef("%v", err)
				}
				goals = append(goals, g)
			}
			if len(goals) == 0 {
				return cli.Usagef("nothing to evaluate: give GOAL_FILEs or drop --examples=false")
			}
			seen := map[string]bool{}
			for _, g := range goals {
				if seen[g.Name] {
					return cli.Usagef("two goals are named %q; their plans would overwrite each other in %s (name JSON goal files with \"name\")", g.Name, outDir)
				}
				seen[g.Name] = true
			}
			client, err := planSetup(cmd, app, solver, &req)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(outDir, 0o755); err != nil {
				return fmt.Errorf("--out-dir: %w", err)
			}
			return withKernel(cmd.Context(), db, false, func(k *solve.Kernel) error {
				rep, err := k.Eval(cmd.Context(), client, goals, req, outDir)
				if rep != nil {
					if *asJSON {
						if perr := cli.PrintJSON(cmd.OutOrStdout(), rep); perr != nil {
							return perr
						}
					} else {
						fmt.Fprint(cmd.OutOrStdout(), termtext.Block(solve.EvalMarkdown(rep)))
					}
				}
				if err != nil {
					return err
				}
				if !rep.OK() {
					return fmt.Errorf("%d of %d goal(s) planned, %d with every assertion passing", rep.Total.Planned, rep.Total.Goals, rep.Total.Clean)
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&outDir, "out-dir", "eval", "directory for the plan files (NAME.json, .md, .mmd, .svg)")
	f.BoolVar(&examples, "examples", true, "plan the spec's three examples too")
	dbFlag(cmd, &db)
	f.DurationVar(&req.MaxWall, "max-wall", 10*time.Minute, "wall-clock cap for each goal's planning (0 = none)")
	f.IntVar(&req.Retries, "retries", 2, "re-asks, with the violations quoted, when the kernel rejects an answer")
	f.IntVar(&req.SurveyCalls, "survey-calls", solve.DefaultSurveyCalls, "most survey requests per goal, re-asks included")
	f.StringVar(&solver, "smt", "", "cross-check each plan with z3 (needs the z3 binary)")
	asJSON = cli.JSONFlag(cmd)
	return cmd
}

// readGoalFile reads a goal: plain text, or JSON for a .json file. The
// name defaults to the file's base name.
func readGoalFile(path string) (solve.EvalGoal, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return solve.EvalGoal{}, fmt.Errorf("goal file: %w", err)
	}
	g := solve.EvalGoal{Name: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))}
	if strings.EqualFold(filepath.Ext(path), ".json") {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&g); err != nil {
			return g, fmt.Errorf("goal file %s: %v (want {\"name\", \"goal\", \"constraints\", \"budget_usd\", \"time_hours\"})", path, err)
		}
		if g.Name == "" {
			g.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		}
	} else {
		g.Goal = strings.TrimSpace(string(data))
	}
	if strings.TrimSpace(g.Goal) == "" {
		return g, fmt.Errorf("goal file %s has no goal", path)
	}
	if g.Name == "" || strings.ContainsAny(g.Name, `/\`) || g.Name == "." || g.Name == ".." {
		return g, fmt.Errorf("goal file %s: name %q cannot name a plan file", path, g.Name)
	}
	for _, v := range []*float64{g.BudgetUSD, g.TimeHours} {
		if v != nil && !(*v > 0) {
			return g, fmt.Errorf("goal file %s: budget_usd and time_hours must be positive", path)
		}
	}
	return g, nil
}
