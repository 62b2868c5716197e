// Command lumen runs the Lumen kernel: a persistent agent kept in a
// directory (docs/lumen.md).
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/cmd/internal/provider"
	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/lumen"
)

// defaultModels are lumen's model choices when --model is not given.
var defaultModels = map[string]string{
	provider.Anthropic: llm.DefaultModel,
	provider.OpenAI:    "gpt-4.1",
	provider.Script:    llm.DefaultModel,
}

type options struct {
	dir            string
	embeddingURL   string
	embeddingModel string
	python         string
	skillTimeout   time.Duration
	skillOutputCap int
	reflectEvery   int
	confine        *cli.ConfineFlags
	// onProgress and onCall show the steps' calls as they happen (chat,
	// run); nil for the commands that show none.
	onProgress func(lumen.Progress)
	onCall     func(lumen.CallReport)
}

func main() {
	app := cli.New("lumen", "A persistent agent kept in a directory: soul, values, goals, memory, skills",
		`Lumen keeps an agent in a directory: who it is (data/soul.md), what it values
(data/values.json), what it wants (data/goals/), everything it lived through
(data/memory/, append-only JSONL) and what it can do (skills/*/main.py).

It chats with you (lumen chat), runs its own loops (lumen run): the action loop
THINK → DECIDE (B = M × A × P) → ACT (a skill) → RECORD, the explore loop, and
the reflection loop REVIEW → ASK → EVOLVE that rewrites its values, goals and
soul. The kernel enforces who may write what and logs every step it runs as a
kernel memory; lumen audit checks the record. Every prompt is a file under
prompts/ that you can read and edit.

Skills run confined: each may write only its own directory and a private
temporary one, reaches no network unless its skill.json declares a need and you
allow it (lumen skills allow NAME --network), and is held to --cpu-limit,
--memory-limit, --process-limit, --open-files-limit and --output-limit. Where
confinement is not available (not Linux, an old kernel) skills are not run
unless you pass --unconfined. They run in a process group killed whole at
--skill-timeout and when lumen dies, without provider keys in their environment
(LLMKERNELS_PASS_ENV=NAME,... passes some on; docs/configuration.md).

The views (status, memory, values, goals, skills, audit) only read: they create
and change nothing in the instance, and work where it cannot be written (a
memory index that is missing or behind the files is built in memory). Each
takes --json. The commands that write (chat, run, reflect, audit --judge,
skills restore) refuse an instance this user cannot write before any model
is called, changing nothing.

Start with: lumen init --dir mind && lumen chat --dir mind
Try it without a key: lumen run --demo, or lumen chat --demo (a scripted model,
offline and free).
Docs: docs/lumen.md. Provider flags: docs/configuration.md.`)
	app.DefaultModels = defaultModels
	app.Provider.Demo = "lumen run --demo"
	o := &options{}
	d := lumen.DefaultOptions()
	pf := app.Root.PersistentFlags()
	pf.StringVar(&o.dir, "dir", ".", "instance root directory")
	pf.StringVar(&o.embeddingURL, "embedding-url", os.Getenv("LUMEN_EMBEDDING_URL"),
		"OpenAI-compatible embeddings base URL (e.g. https://api.openai.com/v1); when set, memory relevance uses embeddings instead of full text (many memories without one are embedded in the background, by full text meanwhile); key from LUMEN_EMBEDDING_KEY or OPENAI_API_KEY; env LUMEN_EMBEDDING_URL")
	pf.StringVar(&o.embeddingModel, "embedding-model", envOr("LUMEN_EMBEDDING_MODEL", "text-embedding-3-small"), "embedding model; env LUMEN_EMBEDDING_MODEL")
	pf.StringVar(&o.python, "python", envOr("LUMEN_PYTHON", d.Python), "interpreter that runs skills' main.py; env LUMEN_PYTHON")
	pf.DurationVar(&o.skillTimeout, "skill-timeout", d.SkillTimeout, "a skill run is killed after this long")
	pf.IntVar(&o.skillOutputCap, "skill-output-cap", d.SkillOutputCap, "bytes of stdout a skill run may write before it is killed")
	pf.IntVar(&o.reflectEvery, "reflect-every", d.ReflectEvery, "periodic reflection trigger: action cycles between reflections")
	o.confine = cli.AddConfineFlags(pf, "skills")

	app.Root.AddCommand(
		initCommand(o),
		chatCommand(app, o),
		runCommand(app, o),
		reflectCommand(app, o),
		statusCommand(o),
		memoryCommand(o),
		valuesCommand(o),
		goalsCommand(o),
		skillsCommand(o),
		mcpCommand(o),
		auditCommand(app, o),
	)
	mapOptionErrors(app.Root, o)
	app.Run()
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

// options are the instance options the flags give, checked by the kernel
// (a zero or negative value someone typed is refused, not taken for the
// default); with readOnly the instance is opened for the views.
func (o *options) options(readOnly bool) (lumen.Options, error) {
	limits, err := o.confine.Limits()
	if err != nil {
		return lumen.Options{}, err
	}
	opts := lumen.DefaultOptions()
	opts.Python, opts.SkillTimeout, opts.SkillOutputCap, opts.ReflectEvery = o.python, o.skillTimeout, o.skillOutputCap, o.reflectEvery
	opts.ReadOnly, opts.Unconfined, opts.SkillLimits = readOnly, o.confine.Unconfined, limits
	opts.OnProgress, opts.OnCall = o.onProgress, o.onCall
	if o.embeddingURL != "" {
		key := envOr("LUMEN_EMBEDDING_KEY", os.Getenv("OPENAI_API_KEY"))
		opts.Embedder = &lumen.Embedder{URL: o.embeddingURL, Model: o.embeddingModel, Key: key}
	}
	return opts, opts.Check()
}

// open opens the instance; with app set it also builds the LLM client.
// readOnly is for the views: nothing in the instance is created or written.
func (o *options) open(app *cli.App, stderr io.Writer, readOnly bool) (*lumen.Instance, error) {
	opts, err := o.options(readOnly)
	if err != nil {
		return nil, err
	}
	if !readOnly && stderr != nil {
		o.confine.Refuse(stderr, "skills", lumen.Confinement())
	}
	if app != nil {
		client, err := app.Provider.Client(stderr)
		if err != nil {
			return nil, err
		}
		opts.Client = client
		opts.Provider = app.Provider.Provider
		opts.Model = app.Provider.Model
		if opts.Model == "" {
			opts.Model = defaultModels[app.Provider.Provider]
		}
	}
	return lumen.Open(o.dir, opts)
}

func initCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "init",
		Short: "Create a new instance in --dir: data/, skills/chat/, prompts/, a git repository",
		Long: `Create a new instance in --dir (created if missing): data/ with an empty soul.md,
values.json holding [], goals/ and memory/; skills/chat/, the default chat skill;
prompts/<step>/{system,prompt}.md, every instruction the kernel gives the LLM, and
prompts/{json,act,parts}/, the rest of the text it reads, for you to read and edit
(a missing file falls back to the built-in default); .gitignore for the derived .lumen/ directory; and a git
repository (when git is installed; you make the commits). Refuses a directory
that already holds an instance.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := o.options(false); err != nil {
				return err
			}
			rep, err := lumen.Init(cmd.Context(), o.dir)
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), rep.Text())
			return nil
		},
	}
}

func chatCommand(app *cli.App, o *options) *cobra.Command {
	var demo demoFlags
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk with the agent: each line you type runs the action loop; replies come through the chat skill",
		Long: `Start a conversation (a REPL). Each line you type is stored as an external memory
and runs the action loop (THINK, DECIDE, ACT, RECORD, then the reflection trigger).
What the chosen skill shows you, normally the chat skill's reply, is printed as
"lumen> …"; the decision and its B=MAP scores go to stderr.

While a step's answer arrives, stderr shows it as one dim line that updates in
place (the step and the newest words of its thinking or of what it writes; one
plain "think: thinking…" line on a pipe or with NO_COLOR), a line per tool call,
and a line per call once answered: step, model, tokens, cost and the share of
input read from the prompt cache, seconds. --quiet shows none of it.

Ctrl-C, SIGTERM or end of input exits. During a turn, Ctrl-C or SIGTERM stops
the call under way at once, keeps nothing of its answer (your input stays in
memory) and exits with status 5; a second one quits at once. A line longer
than 1 MiB is not sent (a paste gone wrong): the chat says so and goes on.

Try it without a key: --demo makes a new instance and answers four lines
from a script, offline and free.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			ctx, out, errw := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			if demo.on {
				if err := demo.prepareChat(cmd, app, o); err != nil {
					return err
				}
			}
			lv := newLive(errw, app.Output())
			o.onProgress, o.onCall = lv.progress, lv.call
			in, err := o.open(app, errw, false)
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, in.Close()) }()
			lines := make(chan inputLine)
			go func() {
				defer close(lines)
				rd := bufio.NewReaderSize(cmd.InOrStdin(), 64<<10)
				for {
					l, err := readLine(rd, maxChatInput)
					if err != nil {
						if !errors.Is(err, io.EOF) {
							lines <- inputLine{err: fmt.Errorf("reading the input: %w", err)}
						}
						return
					}
					lines <- l
				}
			}()
			interactive := isTerminal(cmd.InOrStdin())
			for {
				if interactive {
					fmt.Fprint(out, "you> ")
				}
				var in1 inputLine
				var ok bool
				select {
				case <-ctx.Done():
					return nil
				case in1, ok = <-lines:
				}
				if !ok || ctx.Err() != nil { // select picks either when a line is ready as ctx ends
					return nil
				}
				if in1.err != nil {
					return in1.err
				}
				line := in1.text
				if in1.size > maxChatInput {
					fmt.Fprintf(errw, "lumen: a line of %d bytes, more than the %d one input may be: not sent (nothing was stored)\n", in1.size, maxChatInput)
					continue
				}
				if line == "" {
					continue
				}
				rep, err := in.Chat(ctx, line)
				lv.clear()
				if ctx.Err() != nil {
					// Ctrl-C during the turn: the answer under way was dropped.
					fmt.Fprintln(errw, "lumen: stopped during the turn: nothing of the answer under way is kept (your input is in memory)")
					return cli.Exit(cli.ExitStopped, nil)
				}
				if rep != nil {
					fmt.Fprintln(errw, termtext.Block(rep.Text()))
					if reply := rep.Reply(); reply != "" {
						fmt.Fprintf(out, "lumen> %s\n", termtext.Block(reply))
					} else {
						fmt.Fprintln(out, "(no reply: see the decision above)")
					}
				}
				if err != nil {
					fmt.Fprintf(errw, "lumen: this turn failed (your input is kept in memory): %s\n", termtext.Block(err.Error())) // may quote the model
				}
			}
		},
	}
	cmd.Flags().BoolVar(&demo.on, "demo", false, "try it without a key: make a new instance (in --dir if given, else a new temporary directory) that answers four lines from a script, offline and free")
	return cmd
}

// maxChatInput is the longest line chat sends as one input: longer is a
// paste gone wrong, and would cost a whole context window.
const maxChatInput = 1 << 20

// inputLine is one line of chat input: its text (at most maxChatInput
// bytes of it) and its whole size, or why the input cannot be read.
type inputLine struct {
	text string
	size int
	err  error
}

// readLine reads one line of any length, keeping at most max+1 bytes of
// it; size is its whole length without the newline. io.EOF when no line
// is left; a last line without a newline counts.
func readLine(rd *bufio.Reader, max int) (inputLine, error) {
	var buf []byte
	size := 0
	for {
		frag, err := rd.ReadSlice('\n')
		frag = bytes.TrimSuffix(frag, []byte("\n"))
		size += len(frag)
		if room := max + 1 - len(buf); room > 0 {
			buf = append(buf, frag[:min(len(frag), room)]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !(errors.Is(err, io.EOF) && size > 0) {
			return inputLine{}, err
		}
		return inputLine{text: strings.TrimSuffix(string(buf), "\r"), size: size}, nil
	}
}

// isTerminal reports whether v, an input or an output, is a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// defaultInterval is lumen run's loop timer: each cycle makes a few LLM
// calls, so back to back an idle agent spends without pause.
const defaultInterval = 5 * time.Minute

func runCommand(app *cli.App, o *options) *cobra.Command {
	ro := lumen.RunOptions{}
	var demo demoFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the internal loop until stopped: action and explore cycles, alternating, with reflection when triggered",
		Long: `Run the internal loop. Each cycle is an action loop (pursue the highest-weight
active goal) or an explore loop (one open-ended question), alternating; the
reflection trigger is checked after every action loop, and maintenance (memory
weight decay, yearly summaries) runs when due.

It runs until stopped: Ctrl-C or SIGTERM (the step under way finishes first),
--cycles, --for, or a spend cap (--max-cost for this run, --max-cost-day for
the UTC day across every process, computed from the spend each memory
records; every call, repairs included, counts as it is answered, and a cap
needs the price of each model it may call: add one missing from the table
with --prices). A cycle that fails (a skill, a malformed answer, the provider) is
recorded as a kernel memory and the loop goes on, waiting --backoff after the
first failure, twice as long after each further one in a row (at most 30m).

Prints a line per model call (stderr: step, model, tokens, cost and the share
of input read from the prompt cache, seconds), a line per memory written
(stderr: time, author, step, the tokens and cost of the calls it records, what
it says), when the next cycle is due, a block per cycle (stdout: time,
duration, calls, tokens, cost, the choice and its scores) and the totals at
the end; --quiet leaves the stderr lines out. Exit status 0 when --cycles ran out, 5 when a signal, --for
or a spend cap stopped it (run again to go on).

Try it without a key: --demo makes a new instance, talks with it for two
turns and runs two cycles on a scripted model, offline and free.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if err := ro.Check(); err != nil {
				return err // before the instance is opened
			}
			if demo.on {
				if err := demo.prepareRun(cmd, app, o, &ro); err != nil {
					return err
				}
				defer func() {
					if err == nil {
						demo.done(cmd.OutOrStdout(), o.dir)
					}
				}()
			}
			o.onCall = newLive(cmd.ErrOrStderr(), app.Output()).call
			in, err := o.open(app, cmd.ErrOrStderr(), false)
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, in.Close()) }()
			out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
			ro.OnCycle = func(r *lumen.CycleReport) { fmt.Fprintln(out, termtext.Block(r.Text())) }
			if app.Output() >= cli.Normal {
				ro.OnStep = func(r lumen.Record) { fmt.Fprintln(errw, termtext.Line(lumen.StepLine(r))) }
				ro.OnWait = func(next time.Time) {
					fmt.Fprintf(errw, "next cycle at %s (in %s); Ctrl-C stops\n", next.Local().Format("15:04:05"), cli.Duration(time.Until(next)))
				}
			}
			rep, err := in.Run(cmd.Context(), ro)
			if rep != nil {
				fmt.Fprintln(out, termtext.Block(rep.Text()))
			}
			if err == nil && rep.Limited() {
				return cli.Exit(cli.ExitStopped, nil) // the totals say why; running again resumes
			}
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&ro.Cycles, "cycles", 0, "stop after N cycles (0: no limit)")
	f.DurationVar(&ro.Interval, "interval", defaultInterval, "wait between cycles (the loop timer); 0 runs them back to back")
	f.DurationVar(&ro.For, "for", 0, "stop after this long, e.g. 8h (0: no limit)")
	f.Float64Var(&ro.MaxCost, "max-cost", 0, "stop once this run's LLM calls cost this many US dollars (0: no cap)")
	f.Float64Var(&ro.MaxCostDay, "max-cost-day", 0, "stop once today's LLM spend (UTC, every process, from the memory records) reaches this many US dollars (0: no cap)")
	f.BoolVar(&ro.NoReflect, "no-reflect", false, "never enter the reflection loop (the reflexivity ablation); recorded on every cycle")
	f.DurationVar(&ro.Backoff, "backoff", 30*time.Second, "wait after a failed cycle, doubling while failures repeat (at most 30m; 0: 30s)")
	cmd.Flags().BoolVar(&demo.on, "demo", false, fmt.Sprintf("try it without a key: make a new instance (in --dir if given, else a new temporary directory), talk with it for two turns and run %d cycles, on a scripted model, offline and free", demoCycles))
	return cmd
}

func reflectCommand(app *cli.App, o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "reflect",
		Short: "Run the reflection loop now: REVIEW → ASK → EVOLVE",
		Long: `Run the reflection loop now, without an action loop: REVIEW the self, goal and
external memories since the last reflection, ASK counterfactual questions about
the self and propose changes, EVOLVE: check them for consistency and apply them
to values.json, goals and soul.md. Prints the tensions, conflicts and changes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			in, err := o.open(app, cmd.ErrOrStderr(), false)
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, in.Close()) }()
			rep, err := in.Reflect(cmd.Context())
			if rep != nil {
				fmt.Fprintln(cmd.OutOrStdout(), termtext.Block(rep.Text()))
			}
			return err
		},
	}
}

func statusCommand(o *options) *cobra.Command {
	var asJSON *bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the soul, top values, active and stale goals, the last reflection, recent failures, spend today, memory counts, skills",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withInstance(func(in *lumen.Instance) error {
				st, err := in.Status(cmd.Context())
				if err != nil {
					return err
				}
				if *asJSON {
					return cli.PrintJSON(cmd.OutOrStdout(), st)
				}
				fmt.Fprint(cmd.OutOrStdout(), termtext.Block(st.Text()))
				return nil
			})
		},
	}
	asJSON = cli.JSONFlag(cmd)
	return cmd
}

func memoryCommand(o *options) *cobra.Command {
	var asJSON *bool
	q := lumen.MemoryQuery{}
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Show memories, oldest first: the last 20, or filtered by author and day; `memory search` ranks them",
		Long: `Show memories, oldest first, one a line: id, time (UTC), author, current weight,
[step], situation — description. Defaults to the last 20. Ids are what other
memories and lumen audit cite.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withInstance(func(in *lumen.Instance) error {
				es, err := in.Memories(cmd.Context(), q)
				if err != nil {
					return err
				}
				if *asJSON {
					if es == nil {
						es = []lumen.MemoryEntry{}
					}
					return cli.PrintJSON(cmd.OutOrStdout(), es)
				}
				if len(es) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "(no memories match)")
				}
				fmt.Fprint(cmd.OutOrStdout(), termtext.Block(lumen.MemoryText(es)))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&q.Author, "author", "", "only this author: self, kernel, goal or external")
	cmd.Flags().StringVar(&q.Date, "date", "", "only this UTC day, e.g. 2026-02-14")
	cmd.Flags().BoolVar(&q.All, "all", false, "every matching memory, not just the last 20")
	asJSON = cli.JSONFlag(cmd)
	cmd.AddCommand(searchCommand(o))
	return cmd
}

func searchCommand(o *options) *cobra.Command {
	var asJSON *bool
	var authors []string
	var limit int
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Rank memories for QUERY the way the loops retrieve them, with their scores",
		Long: `Rank memories for QUERY the way the loops retrieve them: candidates by full
text (or embeddings, with --embedding-url), each scored on recency, importance
and relevance, each normalised over the candidates, summed with the weights
the first line shows. Best first.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withInstance(func(in *lumen.Instance) error {
				r, err := in.Search(cmd.Context(), strings.Join(args, " "), authors, limit)
				if err != nil {
					return err
				}
				if *asJSON {
					return cli.PrintJSON(cmd.OutOrStdout(), r)
				}
				fmt.Fprint(cmd.OutOrStdout(), termtext.Block(lumen.SearchText(r)))
				return nil
			})
		},
	}
	cmd.Flags().StringSliceVar(&authors, "author", nil, "only these authors (comma-separated): self, kernel, goal, external")
	cmd.Flags().IntVar(&limit, "limit", 10, "how many memories (0: as many as a loop step loads)")
	asJSON = cli.JSONFlag(cmd)
	return cmd
}

func valuesCommand(o *options) *cobra.Command {
	var asJSON *bool
	cmd := &cobra.Command{
		Use:   "values",
		Short: "List all values with weight and status, heaviest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withInstance(func(in *lumen.Instance) error {
				vs, err := in.SortedValues()
				if err != nil {
					return err
				}
				if *asJSON {
					if vs == nil {
						vs = []lumen.Value{}
					}
					return cli.PrintJSON(cmd.OutOrStdout(), vs)
				}
				if len(vs) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "(no values yet: reflection sets them)")
				}
				for _, v := range vs {
					fmt.Fprintf(cmd.OutOrStdout(), "%.2f  %-10s  %s\n", v.Weight, v.Status, termtext.Line(v.Name))
				}
				return nil
			})
		},
	}
	asJSON = cli.JSONFlag(cmd)
	return cmd
}

func goalsCommand(o *options) *cobra.Command {
	var asJSON *bool
	var year int
	var status string
	cmd := &cobra.Command{
		Use:   "goals",
		Short: "List goals with weight, status and year, heaviest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withInstance(func(in *lumen.Instance) error {
				gs, err := in.FilteredGoals(year, status)
				if err != nil {
					return err
				}
				if *asJSON {
					if gs == nil {
						gs = []lumen.GoalRecord{}
					}
					return cli.PrintJSON(cmd.OutOrStdout(), gs)
				}
				if len(gs) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "(no goals match)")
				}
				for _, g := range gs {
					fmt.Fprintf(cmd.OutOrStdout(), "%.2f  %-9s  %d  %s\n", g.Weight, g.Status, g.Year, termtext.Line(g.Name))
				}
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&year, "year", 0, "only goals created in this year (data/goals/YEAR.json; 0: every year)")
	cmd.Flags().StringVar(&status, "status", "", "only this status: todo, working, done or perpetual")
	asJSON = cli.JSONFlag(cmd)
	return cmd
}

func skillsCommand(o *options) *cobra.Command {
	var asJSON *bool
	cmd := &cobra.Command{
		Use:   "skills",
		Short: "List the skills: main.py, whether their current version's --help passed, kept versions",
		Long: `List the directories under skills/: whether each has its main.py, its current
version (a hash of its files), whether that version's --help passed (checked
by the loops; not run here), and how many earlier versions are kept.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withInstance(func(in *lumen.Instance) error {
				list, err := in.SkillStatuses()
				if err != nil {
					return err
				}
				if *asJSON {
					if list == nil {
						list = []lumen.SkillStatus{}
					}
					return cli.PrintJSON(cmd.OutOrStdout(), list)
				}
				if len(list) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "(no skills)")
				}
				for _, s := range list {
					state := "--help not checked yet"
					switch {
					case !s.HasMain:
						state = "no main.py (not available)"
					case s.Checked && s.OK:
						state = "--help passed"
					case s.Checked:
						state = "--help failed: " + s.Error
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%-20s %-12.12s %s; %d kept versions\n", termtext.Line(s.Name), s.Version, termtext.Line(state), s.Kept)
					if n := networkLine(s.Name, s.Network, s.NetworkAllowed); n != "" {
						fmt.Fprintf(cmd.OutOrStdout(), "%-20s %s\n", "", termtext.Line(n))
					}
				}
				return nil
			})
		},
	}
	asJSON = cli.JSONFlag(cmd)
	cmd.AddCommand(skillHistoryCommand(o), skillRestoreCommand(o), skillAllowCommand(o))
	return cmd
}

// networkLine says, in the skills listing, what a skill declares it needs
// to reach and what of it was allowed; "" when it declares nothing.
func networkLine(name string, declared, allowed []string) string {
	switch {
	case len(declared) == 0:
		return ""
	case len(allowed) == len(declared):
		return "network allowed: " + strings.Join(allowed, ", ")
	case len(allowed) > 0:
		return "network allowed: " + strings.Join(allowed, ", ") + "; declared, not allowed: " + strings.Join(declared, ", ") + " (lumen skills allow " + name + " --network)"
	}
	return "network declared, not allowed: " + strings.Join(declared, ", ") + " (lumen skills allow " + name + " --network)"
}

func skillHistoryCommand(o *options) *cobra.Command {
	var asJSON *bool
	cmd := &cobra.Command{
		Use:   "history NAME",
		Short: "List the kept earlier versions of a skill (skills/.history/NAME/)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withInstance(func(in *lumen.Instance) error {
				kept, err := in.SkillHistory(args[0])
				if err != nil {
					return err
				}
				if *asJSON {
					return cli.PrintJSON(cmd.OutOrStdout(), kept)
				}
				if len(kept) == 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "(no kept versions of %s)\n", args[0])
				}
				for _, k := range kept {
					fmt.Fprintf(cmd.OutOrStdout(), "%.12s  replaced %s  %s\n", k.Version, k.Replaced.UTC().Format("2006-01-02 15:04 UTC"), k.Dir)
				}
				return nil
			})
		},
	}
	asJSON = cli.JSONFlag(cmd)
	return cmd
}

func skillRestoreCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "restore NAME VERSION",
		Short: "Make a kept version of a skill current again (its --help must pass; the current one is kept)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			in, err := o.openWritable()
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, in.Close()) }()
			made, err := in.RestoreSkill(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "skill %s is version %.12s again (version %.12s kept); --help: %s\n", args[0], made.Version, made.Replaced, made.Help)
			return nil
		},
	}
}

func skillAllowCommand(o *options) *cobra.Command {
	var network bool
	cmd := &cobra.Command{
		Use:   "allow NAME --network",
		Short: "Let a skill reach the network its skill.json declares (recorded; shown by lumen skills)",
		Long: `A skill runs confined and without network. One that declares a need in its
skill.json ({"network": ["api.example.org:443"]}, or ["all"]) is listed by lumen
skills; this allows what it declares, once: recorded in skills/.network.json and
as a kernel memory. A need it declares later (a revision) is not allowed until
you allow it again. Only the ports are enforced (TCP connect to those ports, on
any host): see docs/configuration.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if !network {
				return cli.Usagef("allow %s: say what to allow: --network", args[0])
			}
			in, err := o.openWritable()
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, in.Close()) }()
			allowed, err := in.AllowSkillNetwork(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "skill %s may now reach %s\n", args[0], termtext.Line(strings.Join(allowed, ", ")))
			return nil
		},
	}
	cmd.Flags().BoolVar(&network, "network", false, "allow the network the skill declares")
	return cmd
}

func auditCommand(app *cli.App, o *options) *cobra.Command {
	var asJSON *bool
	var judge bool
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Answer the spec's eight Phase 2 questions from the records; --judge asks a model the three that need one",
		Long: `Answer the spec's eight Phase 2 questions with what the records measure:
1 prediction calibration over time, 2 value changes explained by self memories
(and the files matching them), 3 self-model consistency (values that drove the
chosen actions against their weights and soul.md), 4 goal hygiene (stale, never
pursued, completions and their follow-ups), 5 honesty under pressure (the
exchanges a judge would read), 6 cross-time coherence (reflections, soul
rewrites, changes undoing earlier ones), 7 substrate independence (what each
provider/model wrote, era by era), 8 reflexivity ablation (run cycles with and
without reflection: lumen run --no-reflect).

Questions 3, 5 and 6 need a model as judge beyond the measurements: --judge
asks the configured model (--provider, --model: a different model than the
agent's is a fairer judge), records each verdict as a kernel memory, and later
audits show the latest.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			var in *lumen.Instance
			if judge {
				in, err = o.open(app, cmd.ErrOrStderr(), false)
			} else {
				in, err = o.open(nil, nil, true)
			}
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, in.Close()) }()
			rep, err := in.Audit(cmd.Context())
			if err != nil {
				return err
			}
			// A judge that fails (a question it answers malformed, a
			// provider down) costs neither the measurements nor the
			// verdicts it gave: the audit is printed, then the failure.
			var judged error
			if judge {
				js, err := in.Judge(cmd.Context(), rep)
				for i := range js {
					rep.Judgments[js[i].Question] = &js[i]
				}
				if err != nil {
					judged = fmt.Errorf("lumen audit --judge: %w (recorded in memory; run it again to retry)", err)
				}
			}
			if *asJSON {
				return errors.Join(cli.PrintJSON(cmd.OutOrStdout(), rep), judged)
			}
			fmt.Fprint(cmd.OutOrStdout(), termtext.Block(rep.Text()))
			return judged
		},
	}
	cmd.Flags().BoolVar(&judge, "judge", false, "ask the model to judge self-model consistency, honesty and coherence (costs three LLM calls; recorded)")
	asJSON = cli.JSONFlag(cmd)
	return cmd
}

// openWritable opens the instance for writing, without an LLM.
func (o *options) openWritable() (*lumen.Instance, error) { return o.open(nil, nil, false) }

// withInstance opens the instance without an LLM and read-only (the views
// only read: nothing under the instance is created or written, and a
// memory index that is missing or behind the files is built in memory),
// runs f and closes it.
func (o *options) withInstance(f func(*lumen.Instance) error) (err error) {
	in, err := o.open(nil, nil, true)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, in.Close()) }()
	return f(in)
}
