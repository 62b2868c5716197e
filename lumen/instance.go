package lumen

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/llmkernels/kernels/internal/proc"
	"github.com/llmkernels/kernels/internal/sqlite"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/lumen/memory"
	"github.com/llmkernels/kernels/lumen/skill"
)

// defaults holds what init copies into a new instance: the prompt
// templates and the default chat skill.
//
//go:embed prompts chatskill
var defaults embed.FS

// steps are the prompt steps, each with prompts/<step>/{system,prompt}.md.
// create-skill is the built-in tool's authoring prompt.
var steps = []string{"think", "decide", "record", "trigger", "explore", "review", "ask", "evolve", "summarize", "create-skill",
	"judge-self-model", "judge-honesty", "judge-coherence"}

// Options configure an open instance. Zero fields take the defaults.
type Options struct {
	Client    *llm.Client // required for the loops; views work without it
	Provider  string      // the provider's name, recorded with the model on every memory ("anthropic")
	Model     string      // model for every step
	MaxTokens int         // per LLM call; default 4096

	// Embedder ranks memory relevance by embeddings; nil means full text.
	Embedder *memory.Embedder

	// ReadOnly opens the instance for the views: nothing under it is
	// created or written (see memory.Options.ReadOnly), and the loops
	// refuse to run.
	ReadOnly bool

	Python         string        // interpreter for skills' main.py; default python3
	SkillTimeout   time.Duration // per skill run; default 60s
	SkillOutputCap int           // bytes of a skill's stdout; default 64 KiB
	// Unconfined runs skills with the user's rights (--unconfined);
	// SkillLimits are a confined skill's resource limits (zero fields:
	// proc.DefaultLimits). See skill's package doc.
	Unconfined  bool
	SkillLimits proc.Limits

	Recent int // N most recent self, goal and external memories a step loads; default 20
	TopK   int // K most relevant memories a step loads; default 10
	// Conversation is how many exchanges of the current chat THINK sees
	// whole; default 12.
	Conversation int
	// SkillsInFull is how many skills' --help THINK and EXPLORE see whole
	// (the most relevant ones); the rest are listed by name; default 6.
	SkillsInFull int

	ReflectEvery   int     // periodic trigger: action cycles between reflections; default 10
	StaleAfter     int     // a todo/working goal idle this many action cycles is stale; default 20
	DeltaThreshold float64 // a prediction delta above this triggers reflection; default 0.5

	DecayEvery   time.Duration // maintenance decays memory weights this often; default 6h
	HalfLife     time.Duration // an unused memory's weight halves in this time; default 7 days
	SummaryEvery int           // new self/goal/external memories before a year's summary is updated; default 50

	Now    func() time.Time // clock; default time.Now
	Logger *slog.Logger     // default slog.Default()
}

func (o *Options) setDefaults() {
	if o.MaxTokens <= 0 {
		o.MaxTokens = 4096
	}
	if o.Recent <= 0 {
		o.Recent = 20
	}
	if o.TopK <= 0 {
		o.TopK = 10
	}
	if o.Conversation <= 0 {
		o.Conversation = 12
	}
	if o.SkillsInFull <= 0 {
		o.SkillsInFull = 6
	}
	if o.ReflectEvery <= 0 {
		o.ReflectEvery = 10
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = 20
	}
	if o.DeltaThreshold <= 0 {
		o.DeltaThreshold = 0.5
	}
	if o.DecayEvery <= 0 {
		o.DecayEvery = 6 * time.Hour
	}
	if o.HalfLife <= 0 {
		o.HalfLife = 7 * 24 * time.Hour
	}
	if o.SummaryEvery <= 0 {
		o.SummaryEvery = 50
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Instance is one Lumen agent kept in a directory.
type Instance struct {
	Root   string
	opts   Options
	mem    *memory.Store
	skills *skill.Runner

	mu           sync.Mutex
	pending      Usage        // LLM spend not yet written on a memory line
	unsettled    float64      // cost of answers received but not yet charged (lumen run's caps count it)
	spent        Usage        // every call this Instance made
	model        string       // provider/model that last answered
	observe      func(Record) // told of every memory written (lumen run's step lines)
	noReflect    bool         // lumen run --no-reflect: the trigger is not checked
	conversation []Exchange   // the current chat, oldest first
	// turn holds the ids of the memories written since the current turn
	// (a chat input, a goal pursued, an explore or reflect run) began:
	// retrieval leaves them out of relevance (see query).
	turn []string
	// toldPending: the person was told that memories are recalled by
	// their words while they are being embedded (retrievalNotes).
	toldPending bool
}

func (in *Instance) dataDir() string    { return filepath.Join(in.Root, "data") }
func (in *Instance) soulPath() string   { return filepath.Join(in.Root, "data", "soul.md") }
func (in *Instance) valuesPath() string { return filepath.Join(in.Root, "data", "values.json") }
func (in *Instance) goalsDir() string   { return filepath.Join(in.Root, "data", "goals") }
func (in *Instance) memoryDir() string  { return filepath.Join(in.Root, "data", "memory") }
func (in *Instance) derivedDir() string { return filepath.Join(in.Root, ".lumen") }

// Open opens the instance at root. Unless opts.ReadOnly, it also recreates
// an empty data/memory or data/goals that a git clone dropped, pins the old
// references of memories written before ids existed (a migrate memory per
// day file), and brings prompt templates the user never edited up to the
// kernel's current defaults (each a kernel memory).
func Open(root string, opts Options) (*Instance, error) {
	opts.setDefaults()
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	in := &Instance{Root: abs, opts: opts}
	if st, err := os.Stat(in.dataDir()); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("no lumen instance at %s (data/ is missing): run `lumen init --dir %s` first, or pass --dir", abs, root)
	}
	if !opts.ReadOnly {
		if err := in.checkWritable(); err != nil {
			return nil, err
		}
		for _, dir := range []string{in.memoryDir(), in.goalsDir()} {
			if err := keepDir(dir); err != nil {
				return nil, fmt.Errorf("open %s: %w", abs, err)
			}
		}
	}
	in.mem, err = memory.Open(in.memoryDir(), filepath.Join(in.derivedDir(), "index.db"),
		memory.Options{Embedder: opts.Embedder, Logger: opts.Logger, ReadOnly: opts.ReadOnly})
	if err != nil {
		return nil, err
	}
	in.skills = &skill.Runner{Dir: filepath.Join(abs, "skills"), Root: abs,
		CacheFile: filepath.Join(in.derivedDir(), "skill-help.json"), ReadOnly: opts.ReadOnly,
		Python: opts.Python, Timeout: opts.SkillTimeout, OutputCap: opts.SkillOutputCap, Unconfined: opts.Unconfined, Limits: opts.SkillLimits}
	if !opts.ReadOnly {
		in.skills.OnCheck = in.skillChecked
		if err := in.upgrade(context.Background()); err != nil {
			return nil, errors.Join(err, in.Close())
		}
	}
	return in, nil
}

// placeholder keeps an empty directory in git, which keeps no empty ones.
const placeholder = ".gitkeep"

// keepDir makes dir with its placeholder when either is missing.
func keepDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, placeholder)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return os.WriteFile(path, nil, 0o644)
	}
	return nil
}

// checkWritable refuses, before anything is written or any model is
// called, an instance this user cannot write (another user's, chmod -R
// a-w, a read-only mount): every command that opens it for writing writes
// memories in data/memory/ and the index and locks in .lumen/ (in the
// parent of either that is missing, which opening creates). The error
// wraps sqlite.ErrReadOnly and names the directory.
func (in *Instance) checkWritable() error {
	for _, dir := range []string{in.memoryDir(), in.derivedDir()} {
		for dir != in.Root {
			if _, err := os.Stat(dir); err == nil {
				break
			}
			dir = filepath.Dir(dir)
		}
		err := canWrite(dir)
		if err == nil {
			continue
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the probe file's name says nothing
		}
		return fmt.Errorf("open %s for writing: %w: this user cannot create files in %s (%v): the read commands (status, memory, values, goals, skills, audit) work on it as it is; chat, run, reflect, audit --judge and skills restore write to it, so they need an instance this user can write (a copy: cp -r or git clone)",
			in.Root, sqlite.ErrReadOnly, dir, err)
	}
	return nil
}

// canWrite checks that a file can be created in dir.
func canWrite(dir string) error {
	f, err := os.CreateTemp(dir, ".lumen-write-check-")
	if err != nil {
		return err
	}
	return errors.Join(f.Close(), os.Remove(f.Name()))
}

// writable says why the loops cannot run on this instance, if they cannot.
func (in *Instance) writable() error {
	if in.opts.ReadOnly {
		return errors.New("the instance is open read-only: the loops write memories; open it without ReadOnly")
	}
	return nil
}

// Close releases the memory index.
func (in *Instance) Close() error { return in.mem.Close() }

// Memory is the instance's memory store.
func (in *Instance) Memory() *memory.Store { return in.mem }

// Skills is the instance's skill runner.
func (in *Instance) Skills() *skill.Runner { return in.skills }

// InitReport says what Init made.
type InitReport struct {
	Root string `json:"root"`
	// Git is how version control was set up: "initialized" or why not.
	Git     string   `json:"git"`
	Created []string `json:"created"`
}

// Init scaffolds a new instance at root: data/ (empty soul.md, values.json
// holding [], goals/ and memory/ each with a .gitkeep so a clone keeps
// them), skills/chat/, prompts/<step>/ with every
// default template, .gitignore for the derived .lumen/ directory, and a git
// repository when git is installed. It refuses a directory that already
// holds an instance.
func Init(ctx context.Context, root string) (*InitReport, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	for _, p := range []string{"data", "skills", "prompts"} {
		if _, err := os.Stat(filepath.Join(abs, p)); err == nil {
			return nil, fmt.Errorf("%s already holds a lumen instance (%s/ exists); init never overwrites one: choose an empty directory with --dir", abs, p)
		}
	}
	rep := &InitReport{Root: abs}
	mkdir := func(rel string) error {
		rep.Created = append(rep.Created, rel+"/")
		return os.MkdirAll(filepath.Join(abs, rel), 0o755)
	}
	write := func(rel string, data []byte, perm os.FileMode) error {
		rep.Created = append(rep.Created, rel)
		path := filepath.Join(abs, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		return os.WriteFile(path, data, perm)
	}
	steps := []func() error{
		func() error { return mkdir("data/goals") },
		func() error { return mkdir("data/memory") },
		func() error { return write("data/goals/"+placeholder, nil, 0o644) },
		func() error { return write("data/memory/"+placeholder, nil, 0o644) },
		func() error { return write("data/soul.md", nil, 0o644) },
		func() error { return write("data/values.json", []byte("[]\n"), 0o644) },
		func() error {
			return write(".gitignore", []byte("# derived by lumen, rebuilt from data/ when deleted\n.lumen/\n"), 0o644)
		},
		func() error { return copyTree(defaults, "chatskill", "skills/chat", write) },
		func() error { return copyTree(defaults, "prompts", "prompts", write) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, fmt.Errorf("init %s: %w", abs, err)
		}
	}
	rep.Git = gitInit(ctx, abs)
	return rep, nil
}

func copyTree(src fs.FS, from, to string, write func(string, []byte, os.FileMode) error) error {
	return fs.WalkDir(src, from, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(src, path)
		if err != nil {
			return err
		}
		perm := os.FileMode(0o644)
		if strings.HasSuffix(path, ".py") {
			perm = 0o755
		}
		return write(filepath.ToSlash(filepath.Join(to, strings.TrimPrefix(path, from+"/"))), data, perm)
	})
}

// gitInit makes root a git repository when git is installed.
func gitInit(ctx context.Context, root string) string {
	git, err := exec.LookPath("git")
	if err != nil {
		return "git not found: the instance has no version control; install git and run `git init` in " + root
	}
	r, err := proc.Run(ctx, proc.Cmd{Name: git, Args: []string{"init", "-q", root}, MergeStderr: true})
	if err != nil {
		return fmt.Sprintf("git init failed: %v", err)
	}
	if err := r.Err(); err != nil {
		return fmt.Sprintf("git init failed: %v: %s", err, strings.TrimSpace(string(r.Stdout)))
	}
	return "initialized (commits are yours to make: the kernel never commits)"
}
