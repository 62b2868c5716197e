package main

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/cmd/internal/provider"
	"github.com/llmkernels/kernels/solve"
)

// demoScript holds the model's answers for the demo goal, one per request,
// matched by operation and goal (format: docs/scripts.md). The kernel does
// everything else for real: the loop, the workspace, go test, the ledger
// and the report.
//
//go:embed demo/stats.json
var demoScript []byte

// demoGoal is the goal the demo script answers.
const demoGoal = "Add Mean and Median to package stats, with tests"

// demoBudget and demoTime are the demo run's root budget and wall time.
const (
	demoBudget = 5.0
	demoTime   = "30m"
)

// demoFlags is solve run's --demo: the run plays demoGoal on the scripted
// provider in a directory of its own, so it needs no key and costs nothing.
type demoFlags struct {
	on  bool
	dir string
}

func (d *demoFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&d.on, "demo", false, "try it without a key: run a small goal (add Mean and Median to a Go package, with tests) end to end on a scripted model, offline and free, in DIR (the argument, created if missing) or a new temporary directory; needs Go on PATH for its tests")
}

// args is cobra's argument check: GOAL normally, an optional DIR with --demo.
func (d *demoFlags) args(cmd *cobra.Command, args []string) error {
	if d.on {
		return cobra.MaximumNArgs(1)(cmd, args)
	}
	return cobra.ExactArgs(1)(cmd, args)
}

// demoExcludes are the flags --demo sets itself.
var demoExcludes = []string{"provider", "script", "model", "fallback", "base-url", "workspace", "db", "report", "no-report", "remote", "constraint", "suggest", "budget", "time"}

// prepare sets the run up as the demo: its directory (made here), the
// script written into it, the workspace, the database, the report, and the
// scripted provider. It says on out what the demo is and where it runs.
func (d *demoFlags) prepare(cmd *cobra.Command, app *cli.App, args []string, req *solve.RunRequest, timeCap, db *string, report *reportFlags) error {
	for _, name := range demoExcludes {
		if cmd.Flags().Changed(name) {
			return cli.Usagef("--demo runs its own goal on a scripted model in its own directory: drop --%s", name)
		}
	}
	if _, err := exec.LookPath("go"); err != nil {
		return errors.New("the demo builds a small Go package and runs go test, which needs Go on PATH (https://go.dev/dl)")
	}
	dir, err := demoDir(args)
	if err != nil {
		return err
	}
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return fmt.Errorf("making the demo's workspace: %w", err)
	}
	if err := os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module example.com/stats\n\ngo 1.22\n"), 0o644); err != nil {
		return fmt.Errorf("making the demo's workspace: %w", err)
	}
	scriptFile := filepath.Join(dir, "demo-script.json")
	if err := os.WriteFile(scriptFile, demoScript, 0o644); err != nil {
		return fmt.Errorf("writing the demo's script: %w", err)
	}
	d.dir = dir
	app.Provider.Provider = provider.Script
	app.Provider.Script = scriptFile
	app.Provider.Model = ""
	app.Provider.Fallback = nil
	app.Provider.From = nil
	req.Goal = demoGoal
	req.Workspace = ws
	req.BudgetUSD = demoBudget
	*timeCap = demoTime
	*db = filepath.Join(dir, "kernel.db")
	report.dir = dir
	fmt.Fprintf(cmd.OutOrStdout(), `solve demo: this is a demo. A scripted model plays the LLM (its answers are
in %s): no API key, no network, nothing is charged; the costs
shown are what these calls would cost on %s. Everything else is the
real kernel: the loop, the budget ledger, go test in the workspace, the merge
and the report.
demo directory: %s
goal: %q (budget $%.2f, time %s)
`, scriptFile, defaultModels[provider.Script], dir, demoGoal, demoBudget, demoTime)
	return nil
}

// demoDir makes the demo's directory: the argument (which must be empty
// if it exists, so a demo never mixes with other work), or a new
// temporary one.
func demoDir(args []string) (string, error) {
	if len(args) == 0 {
		dir, err := os.MkdirTemp("", "solve-demo-")
		if err != nil {
			return "", fmt.Errorf("making the demo's directory: %w", err)
		}
		return dir, nil
	}
	dir, err := filepath.Abs(args[0])
	if err != nil {
		return "", fmt.Errorf("the demo's directory %s: %w", args[0], err)
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("making the demo's directory: %w", err)
		}
	case err != nil:
		return "", cli.Usagef("the demo's directory %s: %v", args[0], err)
	case len(entries) > 0:
		return "", cli.Usagef("the demo's directory %s is not empty: give a new or empty directory, or none for a temporary one", args[0])
	}
	return dir, nil
}

// done says where to look once the demo has run.
func (d *demoFlags) done(w io.Writer, root string) {
	fmt.Fprintf(w, `demo finished. Look at what it did:
  the code:    %s
  the report:  %s (Markdown; .svg is the Gantt chart)
  the tree:    solve status --db %s %s
  the calls:   solve log --db %s --tier 1
A real run takes your goal and a key: solve run "GOAL" --workspace DIR --budget USD
(set ANTHROPIC_API_KEY, or see --provider; docs/solve.md).
`, filepath.Join(d.dir, "ws"), filepath.Join(d.dir, "run-"+solve.ShortID(root)+".md"), filepath.Join(d.dir, "kernel.db"), solve.ShortID(root),
		filepath.Join(d.dir, "kernel.db"))
}
