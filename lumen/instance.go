package lumen

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/internal/proc"
	"github.com/llmkernels/kernels/internal/sqlite"
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

// Instance is one Lumen agent kept in a directory.
type Instance struct {
	Root   string
	opts   Options
	mem    *memory.Store
	skills *skill.Runner
	mcp    *mcpTools // the MCP servers' tools, beside the skills (nil read-only)

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
	// chatCtx is the context of the chat turn under way (nil outside
	// one): its end stops the model call in progress (callContext).
	chatCtx context.Context
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
	opts = opts.withDefaults()
	if err := opts.Check(); err != nil {
		return nil, err
	}
	abs, err := instanceDir(root)
	if err != nil {
		return nil, err
	}
	in := &Instance{Root: abs, opts: opts}
	if st, err := os.Stat(in.dataDir()); err != nil || !st.IsDir() {
		return nil, &NoInstanceError{Dir: abs}
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
		in.openMCP()
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

// instanceDir is root made absolute; "" is refused (an option error of
// "dir"), as the current directory is rarely what an empty name meant.
func instanceDir(root string) (string, error) {
	if root == "" {
		return "", option.Errorf("dir", "is empty: give the instance directory")
	}
	return filepath.Abs(root)
}

// NotWritableError is Open's error for an instance this user cannot write
// (another user's, chmod -R a-w, a read-only mount), opened for writing.
// It wraps sqlite.ErrReadOnly.
type NotWritableError struct {
	Root string // the instance
	Dir  string // the directory no file can be created in
	Err  error  // why not
}

func (e *NotWritableError) Error() string {
	return fmt.Sprintf("open %s for writing: %v: this user cannot create files in %s (%v): open it read-only to read it as it is; what writes to it needs an instance this user can write (a copy: cp -r or git clone)",
		e.Root, sqlite.ErrReadOnly, e.Dir, e.Err)
}

func (e *NotWritableError) Unwrap() []error { return []error{sqlite.ErrReadOnly, e.Err} }

// checkWritable refuses, before anything is written or any model is
// called, an instance this user cannot write: every command that opens it
// for writing writes memories in data/memory/ and the index and locks in
// .lumen/ (in the parent of either that is missing, which opening
// creates). The error is a *NotWritableError.
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
		return &NotWritableError{Root: in.Root, Dir: dir, Err: err}
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
		return errors.New("the instance is open read-only: the loops write memories; open it for writing")
	}
	return nil
}

// Confinement says whether skills can run confined on this machine, and
// why not when they cannot (they then run only unconfined, if allowed).
func Confinement() proc.Support { return proc.Probe() }

// Close releases the memory index and ends the MCP servers' connections.
func (in *Instance) Close() error { return errors.Join(in.mcp.close(), in.mem.Close()) }

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
	abs, err := instanceDir(root)
	if err != nil {
		return nil, err
	}
	for _, p := range []string{"data", "skills", "prompts"} {
		if _, err := os.Stat(filepath.Join(abs, p)); err == nil {
			return nil, fmt.Errorf("%s already holds a lumen instance (%s/ exists); init never overwrites one: choose an empty directory", abs, p)
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
			return write(".gitignore", []byte("# derived by lumen, rebuilt from data/ when deleted\n.lumen/\n# the MCP servers' headers and environment values: secrets\n"+MCPFile+"\n"), 0o644)
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
