// Command lumen runs the Lumen kernel: a persistent agent kept in a
// directory (docs/lumen.md).
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/internal/cli"
	"github.com/llmkernels/kernels/internal/provider"
	"github.com/llmkernels/kernels/lumen"
	"github.com/llmkernels/kernels/lumen/memory"
)

// defaultModels are lumen's model choices when --model is not given.
var defaultModels = map[string]string{
	provider.Anthropic: "claude-sonnet-4-5",
	provider.OpenAI:    "gpt-4.1",
	provider.Script:    "scripted",
}

type options struct {
	dir            string
	embeddingURL   string
	embeddingModel string
	python         string
	skillTimeout   time.Duration
	skillOutputCap int
	reflectEvery   int
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

Skills run in a process group killed whole at --skill-timeout and when lumen
dies, without provider keys in their environment (LLMKERNELS_PASS_ENV=NAME,...
passes some on; docs/configuration.md).

The views (status, memory, values, goals, skills, audit) only read: they create
and change nothing in the instance, and work where it cannot be written (a
memory index that is missing or behind the files is built in memory).

Start with: lumen init --dir mind && lumen chat --dir mind
Docs: docs/lumen.md. Provider flags: docs/configuration.md.`)
	o := &options{}
	pf := app.Root.PersistentFlags()
	pf.StringVar(&o.dir, "dir", ".", "instance root directory")
	pf.StringVar(&o.embeddingURL, "embedding-url", os.Getenv("LUMEN_EMBEDDING_URL"),
		"OpenAI-compatible embeddings base URL (e.g. https://api.openai.com/v1); when set, memory relevance uses embeddings instead of full text; key from LUMEN_EMBEDDING_KEY or OPENAI_API_KEY; env LUMEN_EMBEDDING_URL")
	pf.StringVar(&o.embeddingModel, "embedding-model", envOr("LUMEN_EMBEDDING_MODEL", "text-embedding-3-small"), "embedding model; env LUMEN_EMBEDDING_MODEL")
	pf.StringVar(&o.python, "python", envOr("LUMEN_PYTHON", "python3"), "interpreter that runs skills' main.py; env LUMEN_PYTHON")
	pf.DurationVar(&o.skillTimeout, "skill-timeout", 60*time.Second, "a skill run is killed after this long")
	pf.IntVar(&o.skillOutputCap, "skill-output-cap", 64<<10, "bytes of stdout a skill run may write before it is killed")
	pf.IntVar(&o.reflectEvery, "reflect-every", 10, "periodic reflection trigger: action cycles between reflections")

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
		auditCommand(o),
	)
	app.Run()
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

// open opens the instance; with app set it also builds the LLM client.
// readOnly is for the views: nothing in the instance is created or written.
func (o *options) open(app *cli.App, stderr io.Writer, readOnly bool) (*lumen.Instance, error) {
	opts := lumen.Options{Python: o.python, SkillTimeout: o.skillTimeout, SkillOutputCap: o.skillOutputCap, ReflectEvery: o.reflectEvery,
		ReadOnly: readOnly}
	if o.embeddingURL != "" {
		key := envOr("LUMEN_EMBEDDING_KEY", os.Getenv("OPENAI_API_KEY"))
		opts.Embedder = &memory.Embedder{URL: o.embeddingURL, Model: o.embeddingModel, Key: key}
	}
	if app != nil {
		client, err := app.Provider.Client(stderr)
		if err != nil {
			return nil, err
		}
		opts.Client = client
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
prompts/<step>/{system,prompt}.md, every instruction the kernel gives the LLM, for
you to read and edit; .gitignore for the derived .lumen/ directory; and a git
repository (when git is installed; you make the commits). Refuses a directory
that already holds an instance.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
	return &cobra.Command{
		Use:   "chat",
		Short: "Talk with the agent: each line you type runs the action loop; replies come through the chat skill",
		Long: `Start a conversation (a REPL). Each line you type is stored as an external memory
and runs the action loop (THINK, DECIDE, ACT, RECORD, then the reflection trigger).
What the chosen skill shows you, normally the chat skill's reply, is printed as
"lumen> …"; the decision and its B=MAP scores go to stderr. Ctrl-C, SIGTERM or
end of input exits; during a turn, Ctrl-C or SIGTERM lets the current step
finish first, and a second one quits at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			in, err := o.open(app, cmd.ErrOrStderr(), false)
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, in.Close()) }()
			ctx, out, errw := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			lines := make(chan string)
			go func() {
				sc := bufio.NewScanner(cmd.InOrStdin())
				sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			interactive := isTerminal(cmd.InOrStdin())
			for {
				if interactive {
					fmt.Fprint(out, "you> ")
				}
				var line string
				var ok bool
				select {
				case <-ctx.Done():
					return nil
				case line, ok = <-lines:
				}
				if !ok {
					return nil
				}
				if line == "" {
					continue
				}
				rep, err := in.Chat(ctx, line)
				if rep != nil {
					fmt.Fprintln(errw, rep.Text())
					if reply := rep.Reply(); reply != "" {
						fmt.Fprintf(out, "lumen> %s\n", reply)
					} else {
						fmt.Fprintln(out, "(no reply: see the decision above)")
					}
				}
				if err != nil {
					fmt.Fprintf(errw, "lumen: this turn failed (your input is kept in memory): %v\n", err)
				}
			}
		},
	}
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func runCommand(app *cli.App, o *options) *cobra.Command {
	var cycles int
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the internal loop: action and explore cycles, alternating, with reflection when triggered",
		Long: `Run the internal loop. Each cycle is an action loop (pursue the highest-weight
active goal) or an explore loop (one open-ended question), alternating; the
reflection trigger is checked after every action loop, and maintenance (memory
weight decay, yearly summaries) runs when due. Prints one block per cycle.
Runs until interrupted, or --cycles N; Ctrl-C or SIGTERM finishes the current
step and stops (a second one quits at once).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			in, err := o.open(app, cmd.ErrOrStderr(), false)
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, in.Close()) }()
			return in.Run(cmd.Context(), lumen.RunOptions{Cycles: cycles, Interval: interval,
				OnCycle: func(r *lumen.CycleReport) { fmt.Fprintln(cmd.OutOrStdout(), r.Text()) }})
		},
	}
	cmd.Flags().IntVar(&cycles, "cycles", 0, "stop after N cycles (0: run until interrupted)")
	cmd.Flags().DurationVar(&interval, "interval", 0, "wait between cycles, e.g. 30s or 5m (the loop timer)")
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
				fmt.Fprintln(cmd.OutOrStdout(), rep.Text())
			}
			return err
		},
	}
}

func statusCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the soul summary, top values, active goals, memory counts by author and the retrieval mode",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withInstance(func(in *lumen.Instance) error {
				st, err := in.Status(cmd.Context())
				if err != nil {
					return err
				}
				fmt.Fprint(cmd.OutOrStdout(), st.Text())
				return nil
			})
		},
	}
}

func memoryCommand(o *options) *cobra.Command {
	q := lumen.MemoryQuery{}
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Show memories, oldest first: the last 20, or filtered by author and day",
		Long: `Show memories, oldest first, one a line: time (UTC), author, current weight,
[step], situation — description. Defaults to the last 20.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withInstance(func(in *lumen.Instance) error {
				es, err := in.Memories(cmd.Context(), q)
				if err != nil {
					return err
				}
				if len(es) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "(no memories match)")
				}
				fmt.Fprint(cmd.OutOrStdout(), lumen.MemoryText(es))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&q.Author, "author", "", "only this author: self, kernel, goal or external")
	cmd.Flags().StringVar(&q.Date, "date", "", "only this UTC day, e.g. 2026-02-14")
	cmd.Flags().BoolVar(&q.All, "all", false, "every matching memory, not just the last 20")
	return cmd
}

func valuesCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "values",
		Short: "List all values with weight and status, heaviest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withInstance(func(in *lumen.Instance) error {
				vs, err := in.SortedValues()
				if err != nil {
					return err
				}
				if len(vs) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "(no values yet: reflection sets them)")
				}
				for _, v := range vs {
					fmt.Fprintf(cmd.OutOrStdout(), "%.2f  %-10s  %s\n", v.Weight, v.Status, v.Name)
				}
				return nil
			})
		},
	}
}

func goalsCommand(o *options) *cobra.Command {
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
				if len(gs) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "(no goals match)")
				}
				for _, g := range gs {
					fmt.Fprintf(cmd.OutOrStdout(), "%.2f  %-9s  %d  %s\n", g.Weight, g.Status, g.Year, g.Name)
				}
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&year, "year", 0, "only goals created in this year (data/goals/YEAR.json)")
	cmd.Flags().StringVar(&status, "status", "", "only this status: todo, working, done or perpetual")
	return cmd
}

func skillsCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "skills",
		Short: "List the directories under skills/ and whether each has its main.py",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withInstance(func(in *lumen.Instance) error {
				list, err := in.Skills().List()
				if err != nil {
					return err
				}
				if len(list) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "(no skills)")
				}
				for _, s := range list {
					fmt.Fprintf(cmd.OutOrStdout(), "%-20s main.py: %s\n", s.Name, yesNo(s.HasMain))
				}
				return nil
			})
		},
	}
}

func yesNo(b bool) string { return map[bool]string{true: "yes", false: "no (not available)"}[b] }

func auditCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "audit",
		Short: "Check that every value and soul change is explained by a self memory; show prediction deltas over time",
		Long: `Answer two of the spec's Phase 2 questions from the data: is every change to
values.json and soul.md explained by a self-authored memory (changes the kernel
logged without one, and changes made outside the kernel, are listed), and are
the deltas between predicted and actual outcomes shrinking over time (per day,
with a least-squares trend).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withInstance(func(in *lumen.Instance) error {
				rep, err := in.Audit(cmd.Context())
				if err != nil {
					return err
				}
				fmt.Fprint(cmd.OutOrStdout(), rep.Text())
				return nil
			})
		},
	}
}

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
