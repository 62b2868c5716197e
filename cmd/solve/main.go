// Command solve runs the SOLVE kernel: planning and the SOLVE loop (docs/solve.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/cmd/internal/provider"
	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/solve"
)

// defaultModels are the planning models when --model is not given; the
// scripted provider meters its canned answers at the Anthropic default.
var defaultModels = map[string]string{
	provider.Anthropic: llm.DefaultDeepModel,
	provider.OpenAI:    "gpt-5",
	provider.Script:    llm.DefaultDeepModel,
}

func main() {
	app := cli.New("solve", "Turn a goal with hard constraints into a checked task DAG, and solve it",
		`Solve turns a goal with hard constraints (cost, time, quality) into a
constraint-checked task DAG, and can run the SOLVE loop that carries it out.

Plan: 'solve plan GOAL' asks your model for the constraints and a task DAG,
does all the arithmetic itself (costs, critical path, SAT/TIGHT/UNSAT verdicts,
walls), surveys cheaper or faster approaches where a constraint fails and
repairs the plan by exact search; it writes plan.json with a report, a Mermaid
DAG and a Gantt chart. 'solve check plan.json' recomputes every figure of a
plan file and proves its repair claim; 'solve eval' plans the spec's three
examples and checks each.

Run: 'solve run GOAL --budget USD --time 30m' resolves the goal node by node,
verifies every selected constraint, builds a tool when the resolvers fail, and
asks a person (a capability request) when it cannot go on: answer with 'solve
hire', then 'solve resume'. Every paid call is reserved against the budget
before it runs. Inspect a run with status, log, report, resolvers, kg and
artifacts (add --json for one JSON document); they only read kernel.db.

What can go wrong: a goal, budget or time the kernel cannot take is refused
before anything is spent (exit 2); a run that runs out of money or time asks a
person and waits (exit 4); Ctrl-C or SIGTERM stops a run (exit 5), and after
that or a kill -9 'solve resume' continues it; a database this user cannot
write still works for the commands that only read. Planning and running call
your model: check the set-up with 'solve ping'. Try it without a key: 'solve
run --demo' runs a small goal end to end on a scripted model, offline and
free. Guide: docs/solve.md.`)
	app.DefaultModels = defaultModels
	app.Provider.Demo = "solve run --demo"
	app.Root.AddCommand(planCommand(app), checkCommand(), evalCommand(app), runCommand(app), resumeCommand(app), workerCommand(app), statusCommand(), logCommand(),
		resolversCommand(), kgCommand(), hireCommand(), artifactsCommand(), reportCommand())
	cli.OptionFlags(app.Root, optionFlags)
	app.Run()
}

// optionFlags names the flag (or argument) that sets each option the
// kernel names in its errors (solve.OptionError): the one place the
// command turns the library's names into its own.
var optionFlags = map[string]string{
	"goal":         "GOAL",
	"budget_usd":   "--budget",
	"time":         "--time",
	"workers":      "--workers",
	"tmax":         "--tmax",
	"add_usd":      "--add-budget",
	"add_seconds":  "--add-time",
	"network":      "--allow-network",
	"tier":         "--tier",
	"steps":        "--steps",
	"rescue_after": "--rescue-after",
	"db":           "--db",
	"workspace":    "--workspace",
	"interactive":  "--interactive",
	"smt":          "--smt",
	"time_hours":   "--time",
	"mcp":          "--mcp",
	"mcp_command":  "--mcp-command",
}

func planCommand(app *cli.App) *cobra.Command {
	var (
		req     solve.PlanRequest
		budget  float64
		timeCap string
		out, db string
		solver  string
	)
	cmd := &cobra.Command{
		Use:   "plan GOAL",
		Short: "Plan a goal: constraints, task DAG, budgets, critical path, verdicts, walls, surveys and repair",
		Long: `Plan a goal in five stages: constraint extraction (LLM), decomposition into a
task DAG (LLM; the kernel validates it and re-asks with the exact violations),
kernel arithmetic (cost rollup with PERT, budget waterfall, critical path with
ES/EF/LS/LF and floats, waves, SAT/TIGHT/UNSAT verdicts, walls), approach survey
(LLM) for low-confidence and wall tasks, and repair by exact search (fewest
swaps, then confidence kept, then cost), or an unsat core when nothing works;
when nothing works the survey widens to the next contributors, then asks again
with the violation, within --survey-calls and --max-wall.

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
					return cli.Usagef("--time %q: %v; give a duration such as 24h or 90m", timeCap, err)
				}
				h := d.Hours()
				req.TimeHours = &h
			}
			if err := solve.CheckPlanRequest(req); err != nil {
				return err
			}
			if err := checkOut(out); err != nil {
				return err
			}
			client, err := planSetup(cmd, app, solver, &req)
			if err != nil {
				return err
			}
			return withKernel(cmd.Context(), db, false, func(k *solve.Kernel) error {
				p, err := k.Plan(cmd.Context(), client, req)
				var stopped *solve.StoppedError
				if errors.As(err, &stopped) {
					err = fmt.Errorf("planning stopped by --max-wall %s during stage %s (%d LLM calls, $%.4f): %w (root node %s in %s is marked failed; its logs and attempts are kept)",
						stopped.MaxWall, stopped.Stage, stopped.Calls, stopped.CostUSD, stopped.Err, stopped.Root, solve.DatabaseName(db))
				}
				if err != nil {
					return errors.Join(err, setAsideEarlierPlan(cmd.ErrOrStderr(), out))
				}
				files, err := solve.WritePlan(p, out)
				if err != nil {
					return fmt.Errorf("%w (the plan is kept in %s: solve log --db %s --node %s --tier 2 shows it)", err, db, db, p.RootID)
				}
				fmt.Fprint(cmd.OutOrStdout(), termtext.Block(solve.PlanSummary(p, files)))
				if p.SMT != nil && p.SMT.Disagree > 0 {
					return fmt.Errorf("--smt z3: z3 disagrees with the kernel on %d question(s): %s; the plan was written to %s, with z3's answers in its smt section; this is a kernel bug, please report it with the plan",
						p.SMT.Disagree, p.SMT.Disagreements(), files.JSON)
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&req.Constraints, "constraint", nil, "an extra explicit constraint in words (repeatable)")
	f.Float64Var(&budget, "budget", 0, "budget cap in USD; becomes the logic constraint total_cost <= BUDGET")
	f.StringVar(&timeCap, "time", "", "time cap (e.g. 24h, 90m); becomes the logic constraint critical_path_hours <= TIME")
	f.StringVar(&out, "out", "plan.json", "plan file; the report, Mermaid and SVG files take its base name (.md, .mmd, .svg)")
	dbFlag(cmd, &db)
	f.DurationVar(&req.MaxWall, "max-wall", 10*time.Minute, "wall-clock cap for the whole planning run (0 = none)")
	f.IntVar(&req.Retries, "retries", 2, "re-asks, with the violations quoted, when the kernel rejects an answer (0 = none)")
	f.BoolVar(&req.LogRaw, "log-raw", false, "keep raw prompts and answers in the tier-3 logs (redacted by default)")
	f.StringVar(&solver, "smt", "", "cross-check feasibility and repair with an SMT solver: z3 (needs the z3 binary); the plan is written whatever z3 answers, and a disagreement exits 1")
	f.IntVar(&req.SurveyCalls, "survey-calls", solve.DefaultSurveyCalls, "most survey requests in all rounds, re-asks included; rounds after the first (widen, retry with the violation) run only while calls remain (1 = first round only)")
	return cmd
}

// smtFlag reads --smt: "" for none, or z3, which must be on PATH.
func smtFlag(cmd *cobra.Command, solver string) (bool, error) {
	switch solver {
	case "":
		return false, nil
	case "z3":
		if err := solve.CheckZ3(cmd.Context()); err != nil {
			return false, fmt.Errorf("--smt z3: %w or drop --smt", err)
		}
		return true, nil
	}
	return false, cli.Usagef("--smt %q: the only solver is z3", solver)
}

// planSetup finishes a planning request from the flags (--smt, the model,
// progress on stderr) and returns the provider's client.
func planSetup(cmd *cobra.Command, app *cli.App, solver string, req *solve.PlanRequest) (*llm.Client, error) {
	var err error
	if req.SMT, err = smtFlag(cmd, solver); err != nil {
		return nil, err
	}
	client, err := app.Provider.Client(cmd.ErrOrStderr())
	if err != nil {
		return nil, err
	}
	req.Model = app.Provider.Model
	if req.Model == "" {
		req.Model = defaultModels[app.Provider.Provider]
	}
	req.Progress = termtext.NewWriter(cmd.ErrOrStderr()) // the live view quotes the model
	return client, nil
}

// checkOut refuses an --out the run could not write, before any model
// call is paid for: its directory must take a new file, and none of the
// four files may be a directory.
func checkOut(out string) error {
	f := solve.PlanFilesAt(out)
	dir := filepath.Dir(f.JSON)
	tmp, err := os.CreateTemp(dir, ".solve-out-check-*")
	if err != nil {
		return cli.Usagef("--out %s: cannot write in %s: %v", out, dir, err)
	}
	// An empty file of our own: nothing to report if removing it fails
	// beyond what the later writes will say.
	_ = tmp.Close()
	_ = os.Remove(tmp.Name())
	for _, path := range []string{f.JSON, f.Report, f.Mermaid, f.Gantt} {
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			return cli.Usagef("--out %s: %s is a directory", out, path)
		}
	}
	return nil
}

// setAsideEarlierPlan renames the plan files an earlier run left at --out
// (FILE, .md, .mmd, .svg) to NAME.prev, so that a failed run leaves
// nothing a user could take for its result, and says so.
func setAsideEarlierPlan(w io.Writer, out string) error {
	f := solve.PlanFilesAt(out)
	var moved []string
	var errs []error
	for _, path := range []string{f.JSON, f.Report, f.Mermaid, f.Gantt} {
		if _, err := os.Lstat(path); err != nil {
			continue
		}
		if err := os.Rename(path, path+".prev"); err != nil {
			errs = append(errs, fmt.Errorf("set aside the earlier %s: %w", path, err))
			continue
		}
		moved = append(moved, path)
	}
	if len(moved) > 0 {
		fmt.Fprintf(w, "solve: this run wrote no plan; the files an earlier run left at --out (%s) are renamed with .prev so they are not taken for this run's result\n", strings.Join(moved, ", "))
	}
	return errors.Join(errs...)
}

// DefaultCheckTimeout bounds solve check: the exhaustive pass (about a
// second), the repair search (its 20M-node cap) and z3 (30s a question)
// are each bounded, but not their sum on a large hand-edited plan.
const DefaultCheckTimeout = 5 * time.Minute

func checkCommand() *cobra.Command {
	var asJSON *bool
	var solver string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "check FILE",
		Short: "Run the assertion framework on a plan file, recomputing every figure from its tasks",
		Long: `Run the spec's six groups of assertions (constraint completeness, decomposition
validity, budget arithmetic, approach survey triggers, repair effectiveness,
critical path) on a plan file. Every field is recomputed from the goal, the
constraints, the tasks and the survey answers, never read from the plan's own
figures, so a hand-edited plan fails; docs/solve-plan-format.md lists the few
fields taken on trust. A repair, or "no repair possible", is proved without the
search that made it: by trying every combination when there are few enough,
else by z3 with --smt z3. Prints PASS/FAIL with the numbers; exits 1 on any FAIL.

--timeout bounds the whole check (default 5m; 0 = none): a proof or search
still running then stops, its check is reported UNDECIDED ("undecided within
the time limit": neither proven nor refuted), as is a question z3 could not
decide within its own 30s; with no FAIL, any UNDECIDED exits 5.`,
		Example: `  solve check plan.json
  solve check plan.json --smt z3 --json
  solve check big-plan.json --smt z3 --timeout 30m`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var o solve.CheckOptions
			var err error
			if o.SMT, err = smtFlag(cmd, solver); err != nil {
				return err
			}
			if timeout < 0 {
				return cli.Usagef("--timeout %v: give a duration, or 0 for none", timeout)
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeoutCause(ctx, timeout, fmt.Errorf("solve check --timeout %v", timeout))
				defer cancel()
			}
			rep, err := solve.Check(ctx, args[0], o)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if *asJSON {
				if err := cli.PrintJSON(w, rep); err != nil {
					return err
				}
			} else {
				group := 0
				for _, r := range rep.Assertions {
					if r.Group != group {
						group = r.Group
						fmt.Fprintf(w, "%d %s\n", group, solve.AssertionGroups[group])
					}
					status := "PASS"
					switch {
					case r.Undecided:
						status = "UNDECIDED"
					case !r.Pass:
						status = "FAIL"
					}
					fmt.Fprintf(w, "  %s %s %s: %s\n", status, r.ID, termtext.Line(r.Name), termtext.Line(r.Detail))
				}
				fmt.Fprintf(w, "%d checks: %d PASS, %d FAIL", len(rep.Assertions), rep.Passed, rep.Failed)
				if rep.Undecided > 0 {
					fmt.Fprintf(w, ", %d UNDECIDED", rep.Undecided)
				}
				fmt.Fprintln(w)
			}
			if rep.Failed > 0 {
				return fmt.Errorf("%s: %d of %d checks failed", args[0], rep.Failed, len(rep.Assertions))
			}
			if rep.Undecided > 0 {
				return cli.Exit(cli.ExitStopped, fmt.Errorf("%s: %d of %d checks undecided within the time limit (run again with a longer --timeout, now %v)", args[0], rep.Undecided, len(rep.Assertions), timeout))
			}
			return nil
		},
	}
	asJSON = cli.JSONFlag(cmd)
	cmd.Flags().StringVar(&solver, "smt", "", "also ask z3 every verdict and repair question (needs the z3 binary): proves repair claims too large to enumerate")
	cmd.Flags().DurationVar(&timeout, "timeout", DefaultCheckTimeout, "the time the whole check may take (0 = no limit); a proof or search still running then (or not started) is reported UNDECIDED, exit 5 when nothing fails; every other check is still decided")
	return cmd
}

// withKernel opens kernel.db, runs f and closes it, reporting a failed
// close too. readOnly is for the commands that only read: they never
// create or change a file.
func withKernel(ctx context.Context, db string, readOnly bool, f func(*solve.Kernel) error) (err error) {
	open := solve.Open
	if readOnly {
		open = solve.OpenReadOnly
	}
	k, err := open(ctx, db)
	if errors.Is(err, solve.ErrReadOnly) {
		return fmt.Errorf("%w (--db names another)", err)
	}
	if errors.Is(err, solve.ErrEmpty) {
		return fmt.Errorf("%w ('solve plan' or 'solve run' makes it one; --db names another)", err)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w ('solve plan' or 'solve run' creates it; --db names another)", err)
	}
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, k.Close()) }()
	return f(k)
}

// dbFlag is every command's --db: a SQLite file or a PostgreSQL URL. A
// URL that does not parse, or whose parts are ambiguous (an unescaped @,
// # or ? in the password), is refused before the command does anything
// (exit 2), without showing the password.
// defaultDB is --db's default: kernel.db in the current directory.
const defaultDB = "kernel.db"

func dbFlag(cmd *cobra.Command, db *string) {
	cmd.Flags().StringVar(db, "db", defaultDB, "kernel database: a SQLite file (artifact_store/ sits beside it), or a postgres://user@host/dbname URL that keeps everything, artifact contents included, in PostgreSQL (see docs/solve.md)")
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error { return solve.CheckDatabase(*db) }
}

// runOptions builds the process options: the LLM client, the live view
// and the terminal.
func runOptions(cmd *cobra.Command, app *cli.App, workers int) (solve.Options, string, error) {
	client, err := app.Provider.Client(cmd.ErrOrStderr())
	if err != nil {
		return solve.Options{}, "", err
	}
	model := app.Provider.Model
	if model == "" {
		model = defaultModels[app.Provider.Provider]
	}
	level := app.Output()
	view := newLiveView(cmd.ErrOrStderr(), level) // the live view and the questions quote the model: inert
	// A retry's wait (a 529's retry-after may be long) is said in the live
	// view, so a run that seems idle says why; --verbose adds each answer.
	client.Observe = func(e llm.Event) {
		switch {
		case e.Kind == llm.EventRetry:
			_, _ = fmt.Fprintf(view, "solve: %s: %v; retrying in %s\n", e.Model, e.Err, e.Wait.Round(time.Millisecond)) // the live view is best effort
		case e.Kind == llm.EventResponse && level >= cli.Verbose && e.Call != nil:
			_, _ = fmt.Fprintf(view, "solve: %s\n", cli.ReceivedLine(e.Call))
		}
	}
	return solve.Options{Client: client, Progress: view, Stream: view.delta, In: cmd.InOrStdin(), Workers: workers}, model, nil
}

// clearLive takes the live view's streaming line off the terminal, before
// the run's result or an error is printed.
func clearLive(o solve.Options) {
	if v, ok := o.Progress.(*liveView); ok {
		v.clear()
	}
}

func printResult(w io.Writer, r *solve.Result) {
	fmt.Fprintf(w, "root %s: %s\n", r.RootID, r.Outcome)
	switch r.Outcome {
	case solve.OutcomeAchieved:
		fmt.Fprintf(w, "σ_system %.2f · artifact %s\n%s\n", r.SigmaSystem, r.ArtifactID, termtext.Block(r.Summary))
	case solve.OutcomeWaiting:
		fmt.Fprintf(w, "%d capability request(s) wait for a human: answer with 'solve hire', then 'solve resume %s'\n", r.OpenRequests, r.RootID)
	case solve.OutcomeStopped:
		fmt.Fprintf(w, "stopped before the end; continue with 'solve resume %s'\n", r.RootID)
	default:
		fmt.Fprintf(w, "the goal was not achieved; see 'solve status %s' and 'solve log --node ID'\n", r.RootID)
	}
	fmt.Fprintf(w, "LLM calls: %d · spent $%.4f of $%.2f%s%s · nodes %d\n", r.LLMCalls, r.SpentUSD, r.AllocatedUSD, solve.UnknownNote(r.SpentUSD, r.UnknownUSD), r.CostLabel(), r.Nodes)
	if r.LLMCalls > 0 {
		fmt.Fprintln(w, tokenLine(r))
	}
}

// tokenLine is a run's tokens and its cost line (llm.CostLine: the share
// of the input read from the prompt cache).
func tokenLine(r *solve.Result) string {
	return fmt.Sprintf("tokens %d in (%d written to the cache, %d read from it), %d out · %s",
		r.InputTokens+r.CacheWriteTokens+r.CacheReadTokens, r.CacheWriteTokens, r.CacheReadTokens, r.OutputTokens, llm.CostLine(r.SpentUSD, r.Usage()))
}

// reportFlags are --report FILE and --no-report.
type reportFlags struct {
	out  string
	skip bool
	dir  string // where the default name goes ("": the current directory)
}

func (f *reportFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.out, "report", "", "write the run's report to FILE (.json) and, beside it, .md, .mmd and .svg (default run-ROOT8.json in the current directory)")
	cmd.Flags().BoolVar(&f.skip, "no-report", false, "do not write the run's report")
}

// write writes the report of root; a failure is said on stderr and does
// not change the run's outcome.
func (f *reportFlags) write(cmd *cobra.Command, k *solve.Kernel, root string) {
	if f.skip {
		return
	}
	out := f.out
	if out == "" {
		out = filepath.Join(f.dir, "run-"+solve.ShortID(root)+".json")
	}
	r, err := k.Report(cmd.Context(), root)
	if err == nil {
		var files solve.PlanFiles
		if files, err = solve.WriteReport(r, out); err == nil {
			fmt.Fprintf(cmd.OutOrStdout(), "report: %s, %s, %s, %s\n", files.JSON, files.Report, files.Mermaid, files.Gantt)
			return
		}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "solve: the run's report was not written: %v\n", err)
}

// stopped makes a run whose lease was taken over exit 5 (stopped,
// resumable), like one stopped by a signal.
func stopped(err error) error {
	if errors.Is(err, solve.ErrLeaseLost) {
		return cli.Exit(cli.ExitStopped, err)
	}
	return err
}

// outcomeStatus ends solve run and solve resume with the outcome's exit
// status: 0 achieved, 3 infeasible, 4 waiting for a human, 5 stopped. (A run
// stopped by Ctrl-C or SIGTERM fails with the context's error and exits 5.)
func outcomeStatus(r *solve.Result) error {
	switch r.Outcome {
	case solve.OutcomeInfeasible:
		return cli.Exit(cli.ExitInfeasible, nil)
	case solve.OutcomeWaiting:
		return cli.Exit(cli.ExitWaiting, nil)
	case solve.OutcomeStopped:
		return cli.Exit(cli.ExitStopped, nil)
	}
	return nil
}

func runCommand(app *cli.App) *cobra.Command {
	var (
		req     solve.RunRequest
		timeCap string
		db      string
		remote  bool
		report  reportFlags
		demo    demoFlags
		servers runMCPFlags
	)
	var confine *cli.ConfineFlags // set below, read when the command runs
	cmd := &cobra.Command{
		Use:   "run GOAL | run --demo [DIR]",
		Short: "Run the SOLVE loop on a goal: resolve, verify, decompose, BUILD tools, HIRE a human",
		Long: `Run the SOLVE loop (spec §5). The goal is the root node; each node goes
pending → identifying_constraints → selecting_constraints → selecting_resolver →
resolving → verifying, then resolved (SAT leaf), decomposing (SAT, not a leaf),
gated (σ_path < τ_global: the weakest ancestor is reopened), or back to resolving
with the violation trace (UNSAT, up to T_max, stopping early on stagnation),
then BUILD (lookup-before-build first; a built tool is registered only after its
own tests pass) or HIRE (a capability request; the node waits, others continue).

Money: every paid call is reserved before it runs, in the transaction that
checks the node's remaining budget (the parent's reserve may top it up), and
settled after it with what it cost; no number of workers can overdraw, and a
call a killed process made is settled on resume at what it reserved. A denied
reservation becomes a HIRE request. Children share 80% of the parent's
remainder by weight; 20% stays as reserve; what an invalidated subtree did not
spend returns to the node that was reopened.

Time: every call, check and LLM request runs under a deadline equal to the
node's remaining wall time, and is killed or cancelled there (then HIRE: add
time with 'solve hire ID --add-time').

Verification: every selected constraint gets a check: a logic constraint's
command (a pass is σ = 1.0), a logic constraint's expression over the node's
real spend and time (cost_usd <= 0.5), or the verifier's verdict (a constraint
it skips is asked again, then fails).

Software goals run for real against --workspace (it must exist and be
writable): each attempt works in its own copy, where logic constraints' shell
commands (e.g. go test ./...) run by codex-tools-0 with an output cap, in a
process group killed whole at the deadline or when solve dies, and without
provider keys in its environment (LLMKERNELS_PASS_ENV=NAME,... passes some on;
docs/configuration.md). Only a verified leaf's files are merged into the
workspace; a file changed there since the attempt was made is a merge conflict,
reported, and the attempt is retried. A run stopped at any point, kill -9
included, continues with 'solve resume'; a second process on a running run is
refused.

At its end the run writes its report (--report FILE, default run-ROOT8.json):
the tree with states, σ, money and the critical path, as Markdown (.md), a
Mermaid flowchart (.mmd) and a Gantt chart (.svg).

--suggest TEXT is scored as an attempt of its own on the root, against the same
constraints as any resolver's output; used only if it holds. --interactive runs
the Step 1 extraction dialogue (keep each proposed constraint with y, or e to
type a logic one's expression; an expression is stored only once it parses over
the metrics, else asked again; the core must not be empty) and asks HIRE questions on the terminal at once (c CMD,
b USD, d, or Enter to leave it for 'solve hire').

--mcp NAME=URL (streamable HTTP) and --mcp-command NAME=CMD (stdio; only with
--unconfined: solve cannot confine the process it starts) offer claude-code-0
the tools of your MCP servers, as NAME__tool, when it resolves a node or judges
an output. Such a call becomes a tool loop (the model asks for a tool, the
tool's result goes back, the model answers), at most 8 requests, each one sent
only if its worst case fits what is left of the money reserved for the call
(else the attempt fails, over_budget). Tool results are made inert and cut at
100,000 characters; a server that fails or is slow gives the model an error
result; each tool call is in the run's log (solve log --tier 3). A server that
does not answer at the start is named on stderr and the run goes on without it.
The servers are stored with the run: 'solve resume' offers them again.

The live view (node states, budget) goes to stderr; the outcome and the LLM
call count to stdout.

With --db postgres://… --remote the run's steps are not run in this process:
each ready node's step is sent to the 'solve worker' processes (any number, on
any machines) through a job queue in the same database, and this process waits,
dispatches what becomes ready and finishes the run (see 'solve worker --help');
--workers N then caps this run's steps in flight (default 256).

Exit status: 0 achieved, 3 infeasible, 4 waiting for a human (answer with
'solve hire', then 'solve resume'), 5 stopped by Ctrl-C or SIGTERM or because
another process took the run over (resume it), 1 any other failure, 2 a mistake
on the command line.`,
		Example: `  solve run "Add Mean and Median to package stats, with tests" --workspace ./ws --budget 2 --time 30m
  solve run "Design a 4-layer PCB for a 48V→12V 10A buck converter" --budget 5 --time 1h --constraint "passes thermal test at 60°C"`,
		Args: demo.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			if demo.on {
				if err := demo.prepare(cmd, app, args, &req, &timeCap, &db, &report); err != nil {
					return err
				}
			} else {
				req.Goal = args[0]
			}
			d, err := time.ParseDuration(timeCap)
			if err != nil {
				return cli.Usagef("--time %q: %v; give a duration such as 30m", timeCap, err)
			}
			req.Time = d
			if req.MCP, err = servers.parse(confine.Unconfined); err != nil {
				return err
			}
			// The library takes 0 for its default; on the command line the
			// flags show theirs, and 0 is a mistake.
			if cmd.Flags().Changed("workers") && req.Workers == 0 {
				return cli.Usagef("--workers 0: give at least 1 (nodes run in parallel up to it)")
			}
			if req.TMax == 0 {
				return cli.Usagef("--tmax 0: give at least 1 attempt per resolver before BUILD (default %d)", solve.DefaultTMax)
			}
			if err := solve.CheckRunRequest(req); err != nil {
				return err
			}
			if remote {
				if err := solve.CheckRemoteDatabase(db); err != nil {
					return err
				}
			}
			opts, model, err := runOptions(cmd, app, 0)
			if err != nil {
				return err
			}
			defer clearLive(opts)
			if opts.Sandbox, err = sandboxOf(cmd, confine); err != nil {
				return err
			}
			opts.Remote = remote
			req.Model = model
			prices := llm.DefaultPriceTable()
			if opts.Client != nil && opts.Client.Prices != nil {
				prices = opts.Client.Prices
			}
			if _, ok := prices.Lookup(model); !ok {
				// Nothing prices its calls: the ledger records them at $0
				// and no reservation can hold the budget against them.
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: model %q has no price (give one with --prices FILE): its calls are recorded at $0, and --budget cannot limit them\n", model)
			}
			return withKernel(cmd.Context(), db, false, func(k *solve.Kernel) error {
				r, err := k.Run(cmd.Context(), req, opts)
				if errors.Is(err, solve.ErrEmptyCore) {
					return fmt.Errorf("%w: confirm at least one constraint or give --constraint", solve.ErrEmptyCore)
				}
				if err != nil {
					return stopped(commandHint(err, func(root string, remote bool) string { return resumeLine(root, db, remote, &demo) }))
				}
				clearLive(opts)
				printResult(cmd.OutOrStdout(), r)
				report.write(cmd, k, r.RootID)
				if demo.on {
					demo.done(cmd.OutOrStdout(), r.RootID)
				}
				return outcomeStatus(r)
			})
		},
	}
	report.add(cmd)
	demo.add(cmd, "try it without a key: run a small goal (add Mean and Median to a Go package, with tests) end to end on a scripted model, offline and free, in DIR (the argument, created if missing) or a new temporary directory; needs Go on PATH for its tests")
	f := cmd.Flags()
	f.StringArrayVar(&req.Constraints, "constraint", nil, "an irreducible core constraint in words (repeatable)")
	f.StringArrayVar(&req.Suggest, "suggest", nil, "a human idea: scored against the constraints as an attempt of its own, like any candidate, and given to resolvers as an input (repeatable)")
	f.Float64Var(&req.BudgetUSD, "budget", 1, "root budget in USD")
	f.StringVar(&timeCap, "time", "30m", "root wall-time budget (e.g. 30m, 2h)")
	f.StringVar(&req.Workspace, "workspace", "", "directory where software goals are built and tested (it must exist: a mistyped path is refused, not created)")
	f.IntVar(&req.Workers, "workers", 0, fmt.Sprintf("independent ready nodes run in parallel (same results as 1); default 1, with --remote %d", solve.RemoteInFlight))
	f.IntVar(&req.TMax, "tmax", solve.DefaultTMax, "attempts per resolver before BUILD (T_max)")
	f.BoolVar(&req.Interactive, "interactive", false, "ask the human on the terminal: the Step 1 extraction dialogue, and HIRE at once")
	f.BoolVar(&remote, "remote", false, fmt.Sprintf("send each ready node's step to 'solve worker' processes through --db postgres://… (--workers caps this run's steps in flight, default %d)", solve.RemoteInFlight))
	servers.add(f)
	confine = sandboxFlags(cmd)
	dbFlag(cmd, &db)
	return cmd
}

func resumeCommand(app *cli.App) *cobra.Command {
	var (
		db      string
		workers int
		remote  bool
		report  reportFlags
		demo    demoFlags
	)
	var confine *cli.ConfineFlags // set below, read when the command runs
	cmd := &cobra.Command{
		Use:   "resume [ROOT]",
		Short: "Continue a stopped, waiting or killed run (the latest unfinished one without ROOT)",
		Long: `Continue a run where it stopped: after kill -9, after an error, or after
'solve hire' answered its requests. No resolver attempt whose output was
recorded is repeated; a call the stopped process made but did not record is
settled at what it reserved, marked an unknown outcome (whether it was billed
is not known), so the ledger never holds less than was spent, and at the wall
time it ran by its heartbeat: the time the process was dead is not charged.
A run started with --mcp or --mcp-command offers the same MCP servers again
(one started by a command only with --unconfined; without it the resume is
refused). A run another process is running is refused. ROOT may be
a prefix of the root node id. Writes the run's report at the end, as 'solve
run' does. Exit status as for 'solve run': 0 achieved, 3 infeasible, 4 waiting
for a human, 5 stopped.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := solve.CheckWorkers(workers); err != nil {
				return err
			}
			if remote {
				if err := solve.CheckRemoteDatabase(db); err != nil {
					return err
				}
			}
			if demo.on {
				if err := demo.resumeIn(cmd, app, args, &db, &report); err != nil {
					return err
				}
			}
			opts, _, err := runOptions(cmd, app, workers)
			if err != nil {
				return err
			}
			defer clearLive(opts)
			if opts.Sandbox, err = sandboxOf(cmd, confine); err != nil {
				return err
			}
			opts.Remote = remote
			return withKernel(cmd.Context(), db, false, func(k *solve.Kernel) error {
				root := ""
				if len(args) == 1 && !demo.on {
					root = args[0]
				}
				r, err := k.Resume(cmd.Context(), root, opts)
				if err != nil {
					return stopped(commandHint(err, func(root string, remote bool) string { return resumeLine(root, db, remote, &demo) }))
				}
				clearLive(opts)
				printResult(cmd.OutOrStdout(), r)
				report.write(cmd, k, r.RootID)
				if demo.on {
					demo.done(cmd.OutOrStdout(), r.RootID)
				}
				return outcomeStatus(r)
			})
		},
	}
	report.add(cmd)
	demo.add(cmd, "continue the demo in DIR (the argument) that solve run --demo DIR started and Ctrl-C stopped, on its own script and database")
	dbFlag(cmd, &db)
	cmd.Flags().IntVar(&workers, "workers", 0, fmt.Sprintf("steps run at once (0 = as the run was started; without --workers then, 1, or %d with --remote)", solve.RemoteInFlight))
	cmd.Flags().BoolVar(&remote, "remote", false, "send the steps to 'solve worker' processes through --db postgres://… (as solve run --remote)")
	confine = sandboxFlags(cmd)
	return cmd
}

func workerCommand(app *cli.App) *cobra.Command {
	var (
		db          string
		steps       int
		rescueAfter time.Duration
	)
	var confine *cli.ConfineFlags // set below, read when the command runs
	cmd := &cobra.Command{
		Use:   "worker --db postgres://…",
		Short: "Run the steps of 'solve run --remote' runs from a shared PostgreSQL database, on any machine",
		Long: `Take node steps from the job queue (River) in the PostgreSQL database and run
them, until Ctrl-C or SIGTERM. Start any number of workers, on any machines that
reach the database, then start a run there:
  solve run GOAL --db postgres://… --remote
(or continue one with 'solve resume --remote'), and watch it with
  solve status ROOT --db postgres://…
which shows which worker (host/pid/id) holds which step.

A step runs here exactly as it would in 'solve run': every paid call is
reserved in the database before it runs (no interleaving of workers can
overdraw), under the node's deadline, verified the same way. The model and
limits are the run's; the provider flags (--provider, --base-url, the API key
in the environment) are this worker's.

A worker that dies (kill -9, a lost machine) holds its step until
--rescue-after has passed since the step began; then another worker redoes
the step from the node's last committed state, first settling at what they
reserved the calls the dead attempt left open. So that no step runs twice at
once, each step runs under a deadline of --rescue-after less a tenth (at least
2s) and is retried when cut there: give every worker of a database the same
--rescue-after, longer than your longest resolver call.

River's tables are created or updated in the database when a worker or a
--remote run starts. Exit status: 5 when stopped by Ctrl-C or SIGTERM (the
steps it was running go back to the queue), 2 for a SQLite --db or another
mistake on the command line, 1 any other failure.`,
		Example: `  solve worker --db postgres://solve@db.example/solve --steps 4
  solve run "Add four helpers, one package each" --db postgres://solve@db.example/solve --remote --budget 5 --time 1h`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := solve.CheckRemoteDatabase(db); err != nil {
				return err
			}
			work := solve.WorkerOptions{Steps: steps, RescueAfter: rescueAfter}
			if err := work.Check(); err != nil {
				return err
			}
			opts, _, err := runOptions(cmd, app, 0)
			if err != nil {
				return err
			}
			defer clearLive(opts)
			if opts.Sandbox, err = sandboxOf(cmd, confine); err != nil {
				return err
			}
			return withKernel(cmd.Context(), db, false, func(k *solve.Kernel) error {
				return k.Work(cmd.Context(), opts, work)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&db, "db", "", "the kernel's PostgreSQL database (postgres://…), shared with the run and the other workers")
	f.IntVar(&steps, "steps", 1, "steps this worker runs at once")
	f.DurationVar(&rescueAfter, "rescue-after", solve.DefaultRescueAfter, "a step running longer is presumed abandoned and given to another worker")
	confine = sandboxFlags(cmd)
	return cmd
}

func logCommand() *cobra.Command {
	var (
		db     string
		tier   int
		node   string
		asJSON *bool
	)
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Show the tiered log: 1 flow, 2 decisions, 3 resolver I/O metadata",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withKernel(cmd.Context(), db, true, func(k *solve.Kernel) error {
				rows, err := k.Logs(cmd.Context(), tier, node)
				if err != nil {
					return err
				}
				if *asJSON {
					return cli.PrintJSON(cmd.OutOrStdout(), rows)
				}
				w := &strings.Builder{}
				for _, l := range rows {
					fmt.Fprintf(w, "[%s] T%d", clock(l.Time), l.Tier)
					if l.Goal != "" {
						fmt.Fprintf(w, " (%s)", cli.Line(l.Goal, 40))
					}
					fmt.Fprintf(w, " %s", termtext.Line(l.Summary))
					if l.Tier > 1 && len(l.Detail) > 0 {
						fmt.Fprintf(w, " %s", cli.Line(string(l.Detail), 300))
					}
					fmt.Fprintln(w)
				}
				return printWithNote(cmd.OutOrStdout(), w.String())
			})
		},
	}
	dbFlag(cmd, &db)
	asJSON = cli.JSONFlag(cmd)
	cmd.Flags().IntVar(&tier, "tier", 0, "only this tier (1, 2 or 3; 0 = all)")
	cmd.Flags().StringVar(&node, "node", "", "only this node (id or prefix)")
	return cmd
}

func resolversCommand() *cobra.Command {
	var (
		db     string
		asJSON *bool
	)
	cmd := &cobra.Command{
		Use:   "resolvers",
		Short: "List the resolver registry: boot, built and hired tools with capabilities and record",
		Long: `List the resolver registry: the boot resolvers, and the tools runs built or a
human hired, each with its capabilities, its record and what it is.

The boot resolvers keep the spec's ids: claude-code-0 is an API call to the
model (not the Claude Code program), codex-tools-0 a shell runner (not the Codex
program), self-model-0 answers from the kernel's own records.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withKernel(cmd.Context(), db, true, func(k *solve.Kernel) error {
				rs, err := k.Resolvers(cmd.Context())
				if err != nil {
					return err
				}
				if *asJSON {
					return cli.PrintJSON(cmd.OutOrStdout(), rs)
				}
				for _, r := range rs {
					fmt.Fprintf(cmd.OutOrStdout(), "%-28s %-8s built by %-6s used %d (%d ok, %d failed)  %s\n", termtext.Line(r.ID), r.Type, r.BuiltBy, r.UsageCount, r.SuccessCount, r.FailureCount, termtext.Line(fmt.Sprint(r.Capabilities)))
					if r.Description != "" {
						fmt.Fprintf(cmd.OutOrStdout(), "%28s %s\n", "", termtext.Line(r.Description))
					}
					if n := solve.NetworkLine(r); n != "" {
						fmt.Fprintf(cmd.OutOrStdout(), "%28s %s\n", "", termtext.Line(n))
					}
				}
				return nil
			})
		},
	}
	dbFlag(cmd, &db)
	asJSON = cli.JSONFlag(cmd)
	cmd.AddCommand(allowCommand())
	return cmd
}

func kgCommand() *cobra.Command {
	var (
		db, goal, capability string
		asJSON               *bool
	)
	cmd := &cobra.Command{
		Use:   "kg",
		Short: "Run the knowledge graph's boot-time queries: similar goals, resolver outcomes, failure modes, lookup-before-build",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withKernel(cmd.Context(), db, true, func(k *solve.Kernel) error {
				r, err := k.KG(cmd.Context(), goal, capability)
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				if *asJSON {
					return cli.PrintJSON(w, r)
				}
				fmt.Fprint(w, "edges:")
				for _, e := range r.Edges {
					fmt.Fprintf(w, " %s=%d", e.Relation, e.Count)
				}
				fmt.Fprintln(w)
				for _, p := range r.Patterns {
					if p.History.Empty() {
						fmt.Fprintf(w, "[no history for %q]\n", p.Goal)
					} else {
						fmt.Fprintln(w, termtext.Block(p.History.Render(p.Goal)))
					}
				}
				if r.Lookup != nil {
					fmt.Fprintf(w, "lookup-before-build %s: %s\n", termtext.Line(r.Lookup.Capability), termtext.Line(strings.Join(r.Lookup.Resolvers, ", ")))
				}
				return nil
			})
		},
	}
	dbFlag(cmd, &db)
	asJSON = cli.JSONFlag(cmd)
	cmd.Flags().StringVar(&goal, "goal", "", "goal summary whose pattern to query (default: every goal pattern)")
	cmd.Flags().StringVar(&capability, "capability", "", "also run lookup-before-build for this capability tag")
	return cmd
}

func hireCommand() *cobra.Command {
	var (
		db, command, label, reason string
		allowNetwork               string
		addUSD                     float64
		addTime                    time.Duration
		decline, all               bool
		asJSON                     *bool
		mcpFlags                   = &hireMCPFlags{}
	)
	cmd := &cobra.Command{
		Use:   "hire [REQUEST]",
		Short: "List open capability requests, or answer one: register a resolver command, add budget, or decline",
		Long: `Without REQUEST, list the open capability requests with the context a
human needs: what is needed, what was tried, why it failed, the budget left and
similar past resolutions, and the nodes waiting on it (nodes of a run meeting
the same gap share one request). With REQUEST (an id prefix) answer it, for
every node waiting on it, with exactly one
of --resolver-command (registered as a reusable resolver providing the
capability: toolization, never a one-off answer), --mcp URL or --mcp-command
CMD with --tool NAME (a tool of an MCP server, registered the same way; the
route's parameters are its arguments), --add-budget/--add-time, or
--decline (that request fingerprint is never asked again). Then 'solve resume'.

The listing only reads: it opens the database read-only (it works on a copy of
a run this user cannot write, and creates no kernel.db where there is none).
The answer flags without REQUEST are refused (exit 2), nothing written.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				var given []string
				for _, name := range []string{"resolver-command", "label", "add-budget", "add-time", "decline", "reason", "allow-network", "mcp", "mcp-command", "tool", "cost-per-call", "latency"} {
					if cmd.Flags().Changed(name) {
						given = append(given, "--"+name)
					}
				}
				if len(given) > 0 {
					return cli.Usagef("hire %s: the answer flags need a REQUEST id (list the open requests with 'solve hire'); nothing was written", strings.Join(given, " "))
				}
				// The listing only reads: it opens the database read-only,
				// so it works on a copy nobody may write, and creates nothing.
				return withKernel(cmd.Context(), db, true, func(k *solve.Kernel) error {
					reqs, err := k.Requests(cmd.Context(), all)
					if err != nil {
						return err
					}
					if *asJSON {
						return cli.PrintJSON(cmd.OutOrStdout(), reqs)
					}
					if len(reqs) == 0 {
						fmt.Fprintln(cmd.OutOrStdout(), "no open capability requests")
					}
					for _, r := range reqs {
						fmt.Fprint(cmd.OutOrStdout(), termtext.Block(solve.RequestText(r)))
					}
					return nil
				})
			}
			answer := solve.HireAnswer{Command: command, Network: allowNetworkFlag(allowNetwork), Label: label, AddUSD: addUSD,
				AddSeconds: addTime.Seconds(), Decline: decline, Reason: reason}
			if allowNetwork != "" && command == "" {
				return cli.Usagef("--allow-network goes with --resolver-command: it is what the command may reach")
			}
			if err := solve.CheckHireAnswer(answer); err != nil {
				return err
			}
			set := 0
			for _, b := range []bool{command != "", mcpFlags.url != "" || mcpFlags.command != "", addUSD > 0 || addTime > 0, decline} {
				if b {
					set++
				}
			}
			if set != 1 {
				return cli.Usagef("answer with exactly one of --resolver-command CMD, --mcp URL (or --mcp-command CMD), --add-budget USD (and/or --add-time), or --decline")
			}
			// The server is asked for its tools only once the answer is
			// known to be well formed: nothing is started for a usage error.
			hired, err := mcpAnswer(cmd, mcpFlags)
			if err != nil {
				return err
			}
			answer.MCP = hired
			return withKernel(cmd.Context(), db, false, func(k *solve.Kernel) error {
				done, err := k.Answer(cmd.Context(), args[0], answer)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), termtext.Line(done.Summary))
				return nil
			})
		},
	}
	dbFlag(cmd, &db)
	asJSON = cli.JSONFlag(cmd)
	f := cmd.Flags()
	f.StringVar(&command, "resolver-command", "", "register this shell command (run in the workspace) as a resolver for the capability")
	mcpFlags.add(f)
	f.StringVar(&label, "label", "", "label of the registered resolver")
	f.StringVar(&allowNetwork, "allow-network", "", "let the registered command reach the network: all (the flag alone), or host:port entries, comma-separated (only the ports are enforced)")
	f.Lookup("allow-network").NoOptDefVal = solve.AllNetwork
	f.Float64Var(&addUSD, "add-budget", 0, "add this many USD to the budget of the nodes waiting on the request (shared evenly; with none left waiting, their nearest live ancestor)")
	f.DurationVar(&addTime, "add-time", 0, "add this much wall time to the nodes waiting on the request (shared evenly)")
	f.BoolVar(&decline, "decline", false, "decline: the waiting nodes become infeasible and the request is never asked again")
	f.StringVar(&reason, "reason", "", "why (kept with a decline)")
	f.BoolVar(&all, "all", false, "list answered requests too")
	return cmd
}

func statusCommand() *cobra.Command {
	return readCommand("status [ROOT]", "Show every run's outcome (achieved, stopped: resume continues it, waiting_for_human, infeasible: nothing left to try), or ROOT's tree: states, σ, money spent/allocated/delegated/reserve, goals, times, events",
		func(ctx context.Context, k *solve.Kernel, w io.Writer, root string, asJSON bool) error {
			if root == "" {
				runs, err := k.Runs(ctx)
				if err != nil {
					return err
				}
				if asJSON {
					return cli.PrintJSON(w, runs)
				}
				if len(runs) == 0 {
					fmt.Fprintln(w, "no runs in this kernel.db; start one with solve run")
				}
				// A scripted run's money is marked on its row and
				// labelled once under the list, each label once.
				var notes []string
				for _, r := range runs {
					mark := ""
					if r.CostNote != "" {
						mark = "*"
						if !slices.Contains(notes, r.CostNote) {
							notes = append(notes, r.CostNote)
						}
					}
					fmt.Fprintf(w, "%s  %-17s  σ_system %.2f  spent $%.4f%s of $%.2f  %d nodes  %q\n", r.RootID, r.Outcome, r.SigmaSystem, r.SpentUSD, mark, r.AllocatedUSD, r.Nodes, cli.Line(r.Goal, 60))
				}
				for _, n := range notes {
					fmt.Fprintf(w, "* %s\n", n)
				}
				printConfinement(w)
				return nil
			}
			st, err := k.Status(ctx, root)
			if err != nil {
				return err
			}
			if asJSON {
				return cli.PrintJSON(w, st)
			}
			printStatus(w, st)
			printConfinement(w)
			return nil
		})
}

// printStatus prints a run's tree: per node its state, σ, money (spent by
// its own calls, allocated to it, delegated to children, reserve left),
// attempts, when it was created and resolved, and its goal; then the
// events that changed the tree, and where the run stands.
// printWithNote prints text and, once after it, what the boot resolvers
// it names are (their spec ids name programs that never run).
func printWithNote(w io.Writer, text string) error {
	if note := solve.ResolverNote(text); note != "" {
		text += note + "\n"
	}
	_, err := io.WriteString(w, text)
	return err
}

func printStatus(out io.Writer, st *solve.RunStatus) {
	w := &strings.Builder{}
	defer func() { _ = printWithNote(out, w.String()) }() // a failed write is the command's (cli.checkedWriter)
	for _, n := range st.Nodes {
		in := strings.Repeat("  ", n.Depth)
		sigma := "σ -"
		if n.SigmaV != nil {
			sigma = fmt.Sprintf("σ_v %.2f σ_path %.2f", *n.SigmaV, *n.SigmaPath)
		}
		money := fmt.Sprintf("spent $%.4f", n.SpentUSD)
		if n.UnknownUSD != 0 {
			money += fmt.Sprintf(" ($%.4f unknown outcome)", n.UnknownUSD)
		}
		money += fmt.Sprintf(" · allocated $%.4f", n.AllocatedUSD)
		if n.DelegatedUSD != 0 {
			money += fmt.Sprintf(" · delegated $%.4f", n.DelegatedUSD)
		}
		if n.ReturnedUSD != 0 {
			money += fmt.Sprintf(" · returned $%.4f", n.ReturnedUSD)
		}
		if n.HeldUSD != 0 {
			money += fmt.Sprintf(" · held $%.4f", n.HeldUSD)
		}
		money += fmt.Sprintf(" · reserve $%.4f", n.ReserveUSD)
		when := "created " + clock(n.Created)
		if n.Resolved != "" {
			when += ", resolved " + clock(n.Resolved)
		}
		if n.Reopened > 0 {
			when += fmt.Sprintf(", reopened %d×", n.Reopened)
		}
		fmt.Fprintf(w, "%s%s %s · %s · %s · %.0fs of %.0fs · attempts %d/%d · %s\n", in, solve.ShortID(n.ID), n.State, sigma, money,
			n.SpentSeconds, n.AllocatedSeconds, n.Attempts, n.MaxAttempts, when)
		goal := cli.Line(n.Summary, 70)
		if n.Goal != n.Summary {
			goal += " — " + cli.Line(n.Goal, 160)
		}
		fmt.Fprintf(w, "%s  %s\n", in, goal)
	}
	if len(st.Events) > 0 {
		fmt.Fprintln(w, "events:")
		for _, e := range st.Events {
			fmt.Fprintf(w, "  %s  %s %q: %s\n", clock(e.Time), solve.ShortID(e.NodeID), cli.Line(e.Goal, 50), termtext.Line(e.Detail))
		}
	}
	if len(st.Held) > 0 {
		fmt.Fprintln(w, "held by workers:")
		for _, h := range st.Held {
			fmt.Fprintf(w, "  %s  %s step · worker %s · attempt %d · since %s\n", solve.ShortID(h.NodeID), h.Status, h.Worker, h.Attempt, h.Since.Local().Format("15:04:05"))
		}
	}
	r := st.Result
	fmt.Fprintf(w, "outcome %s · σ_system %.2f · spent $%.4f of $%.2f%s%s", r.Outcome, r.SigmaSystem, r.SpentUSD, r.AllocatedUSD, solve.UnknownNote(r.SpentUSD, r.UnknownUSD), r.CostLabel())
	if r.ReservedUSD > 0 {
		fmt.Fprintf(w, " ($%.4f held by calls in flight)", r.ReservedUSD)
	}
	fmt.Fprintf(w, " · LLM calls %d · open requests %d\n", r.LLMCalls, r.OpenRequests)
	if r.LLMCalls > 0 {
		fmt.Fprintln(w, tokenLine(&r))
	}
}

// clock is a stored UTC timestamp in local time, to the second.
func clock(ts string) string {
	t, err := time.Parse("2006-01-02 15:04:05.000", ts)
	if err != nil {
		return ts
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func reportCommand() *cobra.Command {
	var (
		db, out string
	)
	cmd := &cobra.Command{
		Use:   "report [ROOT]",
		Short: "Write a run's report: its tree with states, σ and money, the critical path, events; Markdown, Mermaid and SVG",
		Long: `Write the report of a run (the latest one without ROOT; ROOT may be an id prefix),
as solve run does at its end: --out FILE (default run-ROOT8.json) holds the data
as JSON, and beside it FILE's base name .md (the report), .mmd (the tree as a
Mermaid flowchart, critical path in red) and .svg (a Gantt chart of the nodes'
calls, critical path in red). kernel.db is only read.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withKernel(cmd.Context(), db, true, func(k *solve.Kernel) error {
				root := ""
				if len(args) == 1 {
					root = args[0]
				} else {
					runs, err := k.Runs(cmd.Context())
					if err != nil {
						return err
					}
					if len(runs) == 0 {
						return errors.New("no runs in this kernel.db; start one with solve run")
					}
					root = runs[len(runs)-1].RootID
				}
				r, err := k.Report(cmd.Context(), root)
				if err != nil {
					return err
				}
				path := out
				if path == "" {
					path = "run-" + solve.ShortID(r.Status.Result.RootID) + ".json"
				}
				files, err := solve.WriteReport(r, path)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "report: %s, %s, %s, %s\n", files.JSON, files.Report, files.Mermaid, files.Gantt)
				return nil
			})
		},
	}
	dbFlag(cmd, &db)
	cmd.Flags().StringVar(&out, "out", "", "report file (.json); .md, .mmd and .svg take its base name (default run-ROOT8.json)")
	return cmd
}

func artifactsCommand() *cobra.Command {
	return readCommand("artifacts [ROOT]", "List artifacts (content-addressed by sha256: in artifact_store/ beside kernel.db, or in the artifact_blobs table on PostgreSQL) with type, σ and node",
		func(ctx context.Context, k *solve.Kernel, w io.Writer, root string, asJSON bool) error {
			arts, err := k.Artifacts(ctx, root)
			if err != nil {
				return err
			}
			if asJSON {
				return cli.PrintJSON(w, arts)
			}
			for _, a := range arts {
				s := "-"
				if a.Sigma != nil {
					s = fmt.Sprintf("%.2f", *a.Sigma)
				}
				fmt.Fprintf(w, "%s  %-14s %-5s σ %-4s %6dB  %s/%s  node %s\n", a.ID, a.Type, a.Format, s, a.Size, path.Dir(a.URI), a.SHA256[:16], solve.ShortID(a.Node))
			}
			return nil
		})
}

// readCommand prints what it reads of one run, or of all runs without ROOT.
func readCommand(use, short string, report func(ctx context.Context, k *solve.Kernel, w io.Writer, root string, asJSON bool) error) *cobra.Command {
	var (
		db     string
		asJSON *bool
	)
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withKernel(cmd.Context(), db, true, func(k *solve.Kernel) error {
				root := ""
				if len(args) == 1 {
					root = args[0]
				}
				return report(cmd.Context(), k, cmd.OutOrStdout(), root, *asJSON)
			})
		},
	}
	dbFlag(cmd, &db)
	asJSON = cli.JSONFlag(cmd)
	return cmd
}
