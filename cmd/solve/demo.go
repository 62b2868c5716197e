package main

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/cmd/internal/provider"
	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/internal/pgdb"
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

func (d *demoFlags) add(cmd *cobra.Command, usage string) {
	cmd.Flags().BoolVar(&d.on, "demo", false, usage)
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
	d.use(app, dir, db, report)
	req.Goal = demoGoal
	req.Workspace = ws
	req.BudgetUSD = demoBudget
	*timeCap = demoTime
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

// resumeIn sets solve resume --demo DIR up: the run of the demo in DIR
// (the latest unfinished one), continued on the script the demo wrote
// there, with its database and its report beside it. It is what a demo
// stopped by Ctrl-C tells the person to run.
func (d *demoFlags) resumeIn(cmd *cobra.Command, app *cli.App, args []string, db *string, report *reportFlags) error {
	for _, name := range demoExcludes {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			return cli.Usagef("--demo continues the demo in DIR on its own script and database: drop --%s", name)
		}
	}
	if len(args) != 1 {
		return cli.Usagef("--demo continues the demo in a directory: give it, as in solve resume --demo DIR")
	}
	dir, err := filepath.Abs(args[0])
	if err != nil {
		return fmt.Errorf("the demo's directory %s: %w", args[0], err)
	}
	for _, f := range []string{filepath.Join(dir, "demo-script.json"), filepath.Join(dir, "kernel.db")} {
		if _, err := os.Stat(f); err != nil {
			return cli.Usagef("%s holds no demo to continue (%v): solve run --demo DIR makes one", args[0], err)
		}
	}
	d.use(app, dir, db, report)
	return nil
}

// use points the command at the demo in dir: the scripted provider on the
// script there, its database, and its report beside them.
func (d *demoFlags) use(app *cli.App, dir string, db *string, report *reportFlags) {
	d.dir = dir
	app.Provider.Provider = provider.Script
	app.Provider.Script = filepath.Join(dir, "demo-script.json")
	app.Provider.Model = ""
	app.Provider.Fallback = nil
	app.Provider.From = nil
	*db = filepath.Join(dir, "kernel.db")
	report.dir = dir
}

// resumeLine is how a person continues a run stopped before its end:
// solve resume with the flags that find it again (the demo's directory,
// a --db other than the default, --remote).
func resumeLine(root, db string, remote bool, demo *demoFlags) string {
	if demo.on {
		return "solve resume --demo " + shellWord(demo.dir)
	}
	line := "solve resume " + solve.ShortID(root)
	if db != defaultDB {
		if strings.Contains(db, "://") {
			db = withoutPassword(db)
		}
		line += " --db " + shellWord(db)
	}
	if remote {
		line += " --remote"
	}
	return line
}

// withoutPassword is a PostgreSQL URL without its password (in the user
// part or the query), for a command to copy: the password belongs in
// PGPASSWORD or ~/.pgpass, and a message never shows it.
func withoutPassword(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return pgdb.Redact(dsn) // refused before any run; shown without its secrets all the same
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	if q := u.Query(); q.Has("password") || q.Has("sslpassword") {
		q.Del("password")
		q.Del("sslpassword")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// shellWord is s quoted for a POSIX shell when it needs it: in double
// quotes when nothing in it is special there, so the hint can stand in
// the single quotes of the message.
func shellWord(s string) string {
	plain := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%=,", r)
	}
	switch {
	case s != "" && strings.IndexFunc(s, func(r rune) bool { return !plain(r) }) < 0:
		return s
	case !strings.ContainsAny(s, "\"$`\\!"):
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// commandHint is err with the library's advice in words replaced by the
// command line that takes it: the resume command (from resume: the
// library knows neither the database nor the demo) for a run stopped
// before its end or one a resume continues, and the flag that keeps a
// run from remote workers.
func commandHint(err error, resume func(root string, remote bool) string) error {
	var s *solve.RunStoppedError
	if errors.As(err, &s) {
		return &hintedStop{RunStoppedError: s, resume: resume(s.Root, s.Remote)}
	}
	var r *solve.ResumeError
	if errors.As(err, &r) {
		how := "continue with '" + resume(r.Root, r.Remote) + "'"
		if r.When != "" {
			how += " " + r.When
		}
		return reworded(err, r, r.Err.Error()+" ("+how+")")
	}
	if errors.Is(err, solve.ErrRemoteMCP) {
		return reworded(err, solve.ErrRemoteMCP, "remote workers cannot offer a run's MCP servers yet; run it without --remote")
	}
	if errors.Is(err, solve.ErrMCPCommandConfined) {
		return reworded(err, solve.ErrMCPCommandConfined, "solve cannot confine the process an MCP server's command starts: give --unconfined to run it, or give the server by its URL with --mcp")
	}
	return err
}

// rewordedError is err with the text of one error it wraps said
// otherwise: what wraps it (the node, the operation) is kept.
type rewordedError struct {
	msg string
	err error
}

func reworded(err, part error, text string) error {
	if o, ok := err.(*option.Error); ok { // still the option error the command names the flag of
		return &option.Error{Field: o.Field, Problem: strings.Replace(o.Problem, part.Error(), text, 1), Err: o.Err}
	}
	return &rewordedError{msg: strings.Replace(err.Error(), part.Error(), text, 1), err: err}
}

func (e *rewordedError) Error() string { return e.msg }

func (e *rewordedError) Unwrap() error { return e.err }

// hintedStop is a *solve.RunStoppedError that names the whole resume command.
type hintedStop struct {
	*solve.RunStoppedError
	resume string
}

func (h *hintedStop) Error() string {
	return fmt.Sprintf("run %s stopped before its end; continue it with '%s'", solve.ShortID(h.Root), h.resume)
}

func (h *hintedStop) Unwrap() error { return h.RunStoppedError }

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
