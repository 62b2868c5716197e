package solve

import (
	"context"

	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/internal/pgdb"
	"github.com/llmkernels/kernels/internal/proc"
	"github.com/llmkernels/kernels/internal/sqlite"
	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/planning"
	"github.com/llmkernels/kernels/solve/planning/smt"
	"github.com/llmkernels/kernels/solve/store"
	"github.com/llmkernels/kernels/solve/workspace"
)

// The options and results the kernel shares with its packages, as they
// are: plain data, with JSON tags where they are printed (the --json
// shapes of docs/solve.md). A caller needs only this package.
type (
	// PlanRequest is a goal to plan (Kernel.Plan).
	PlanRequest = planning.Request
	// Plan is a plan as solve plan writes it (docs/solve-plan-format.md).
	Plan = planning.Plan
	// PlanFiles are the files a plan or a run report is written to.
	PlanFiles = planning.Files
	// CheckOptions tune Check.
	CheckOptions = planning.CheckOptions
	// Assertion is one check of the assertion framework.
	Assertion = planning.Assertion
	// EvalGoal is one goal of an evaluation (Kernel.Eval).
	EvalGoal = planning.EvalGoal
	// EvalReport is what an evaluation found.
	EvalReport = planning.EvalReport
	// StoppedError is a planning run stopped by its wall-clock cap
	// (PlanRequest.MaxWall).
	StoppedError = planning.StoppedError
	// RunStoppedError is a run stopped before its end by its context
	// (Ctrl-C, SIGTERM): Kernel.Resume continues it.
	RunStoppedError = loop.StoppedError
	// ResumeError is a run this process cannot take further that a
	// resume continues (remote workers or not, and when).
	ResumeError = loop.ResumeError
	// RunRequest is a goal for the SOLVE loop (Kernel.Run).
	RunRequest = loop.Request
	// RunMCPServer is an MCP server whose tools a run offers claude-code-0
	// (RunRequest.MCP); stored with the run, so a resume offers it again.
	RunMCPServer = loop.MCPServer
	// Result is where a run stands when the loop stops.
	Result = loop.Result
	// HireAnswer is a person's answer to a capability request.
	HireAnswer = loop.HireAnswer
	// Sandbox is how the commands a run starts are confined.
	Sandbox = workspace.Sandbox
	// OptionError is an option the kernel cannot take: its field, as this
	// package names it, and what is wrong with its value.
	OptionError = option.Error
)

// The outcomes of a run (Result.Outcome).
const (
	OutcomeAchieved   = loop.OutcomeAchieved
	OutcomeWaiting    = loop.OutcomeWaiting
	OutcomeInfeasible = loop.OutcomeInfeasible
	OutcomeStopped    = loop.OutcomeStopped
)

// Defaults of the options.
const (
	DefaultTMax        = loop.DefaultTMax        // attempts per resolver before BUILD
	RemoteInFlight     = loop.RemoteInFlight     // steps a remote run keeps in flight
	DefaultRescueAfter = loop.DefaultRescueAfter // a worker's step is presumed abandoned after it
	DefaultSurveyCalls = planning.DefaultSurveyCalls
	// AllNetwork, as a HireAnswer.Network entry, allows every connection.
	AllNetwork = proc.AllNetwork
)

var (
	// Examples are the spec's three verification goals (solve eval).
	Examples = planning.Examples
	// AssertionGroups names the assertion framework's six groups (1–6).
	AssertionGroups = planning.AssertionGroups
)

// The errors a caller may want to tell apart.
var (
	// ErrEmpty: the database file is empty, not a kernel.db (it wraps
	// fs.ErrNotExist too).
	ErrEmpty = sqlite.ErrEmpty
	// ErrReadOnly: this user cannot write the database.
	ErrReadOnly = sqlite.ErrReadOnly
	// ErrLeaseLost: another process took the run over.
	ErrLeaseLost = store.ErrLeaseLost
	// ErrEmptyCore: a run's irreducible core has no constraint.
	ErrEmptyCore = loop.ErrEmptyCore
	// ErrRemoteMCP: remote workers cannot offer a run's MCP servers.
	ErrRemoteMCP = loop.ErrRemoteMCP
	// ErrMCPCommandConfined: an MCP server's command cannot run confined.
	ErrMCPCommandConfined = loop.ErrMCPCommandConfined
	// ErrNoNetworkDeclared: the resolver declares no network to allow.
	ErrNoNetworkDeclared = loop.ErrNoNetworkDeclared
)

// WritePlan writes a plan as FILE (.json added if missing), BASE.md,
// BASE.mmd and BASE.svg.
func WritePlan(p *Plan, out string) (PlanFiles, error) { return planning.WriteFiles(p, out) }

// PlanFilesAt are the files WritePlan and WriteReport write for out.
func PlanFilesAt(out string) PlanFiles { return planning.OutputFiles(out) }

// PlanSummary is what solve plan prints of a plan written to files.
func PlanSummary(p *Plan, files PlanFiles) string { return planning.Summary(p, files) }

// EvalMarkdown renders an evaluation report.
func EvalMarkdown(r *EvalReport) string { return planning.EvalMarkdown(r) }

// CheckZ3 says whether the z3 binary the SMT cross-check needs is here;
// the error says how to install it.
func CheckZ3(ctx context.Context) error {
	_, err := smt.Version(ctx)
	return err
}

// ResolverNote says on one line what the boot resolvers text names are
// (claude-code-0 an API call to the model, codex-tools-0 a shell runner),
// or "" when it names none: a view showing their ids ends with it once.
func ResolverNote(text string) string { return loop.ResolverNote(text) }

// ShortID is the first eight characters of an id, as listings show it.
func ShortID(id string) string { return store.Short(id) }

// DatabaseName is a database as it may be shown: a path, or a PostgreSQL
// URL without its password.
func DatabaseName(db string) string { return store.Name(db) }

// CheckDatabase refuses a PostgreSQL URL that does not parse or whose
// parts are ambiguous (an unescaped @, # or ? in the password), without
// showing the password: an option error of the field "db". A path is
// taken as it is.
func CheckDatabase(db string) error {
	if !pgdb.IsURL(db) {
		return nil
	}
	if err := pgdb.CheckURL(db); err != nil {
		return &option.Error{Field: "db", Problem: err.Error(), Err: err}
	}
	return nil
}

// CheckRemoteDatabase refuses for a remote run or a worker a database
// other machines cannot reach: workers share a run through PostgreSQL.
func CheckRemoteDatabase(db string) error {
	switch {
	case db == "":
		return option.Errorf("db", "is empty: give postgres://user@host/dbname; workers share a run through PostgreSQL")
	case !pgdb.IsURL(db):
		return option.Errorf("db", "%s is a SQLite file, which only this machine can use: workers share a run through PostgreSQL (postgres://user@host/dbname)", db)
	}
	return CheckDatabase(db)
}

// Confinement says how commands are confined on this machine.
func Confinement() proc.Support { return proc.Probe() }

// ConfinementText says it in words (solve status).
func ConfinementText() string { return proc.Describe(false, proc.Limits{}) }
