// Package skill finds, describes, runs and creates Lumen skills: standalone
// programs in skills/[name]/ whose entry point is main.py.
//
// Protocol. The kernel runs `python3 main.py` (Runner.Python) in the skill's
// directory with LUMEN_DIR (the instance root) and LUMEN_SKILL in the
// environment, writes one JSON object to its stdin and closes it:
//
//	{"input": <any JSON the kernel chose>, "situation": "why the skill is called"}
//
// and reads its stdout, which should be one JSON object:
//
//	{"ok": true, "output": <any JSON: the result for the kernel>, "display": "text for the person at the terminal"}
//	{"ok": false, "error": "what went wrong"}
//
// Stdout that is not a JSON object is taken whole as the output text. A
// non-zero exit status is a failure carrying the end of stderr. Each run has
// a timeout and a cap on stdout; past either the skill's process group is
// killed and the run fails. `main.py --help` must exit 0 and describe what
// the skill does, its input and its output.
//
// Versions. A skill's version is the SHA-256 of its files (paths and
// contents; dot-files, __pycache__, venv, .venv and node_modules left out).
// A skill is ready, an ability the kernel may count on, only once its
// --help passed for its current version. The result, pass or failure, is
// cached per version (.lumen/skill-help.json), so a --help that hangs costs
// its timeout once, and any edit of the skill checks it again. Files a
// skill writes in its own directory while it runs make a new version that
// keeps the --help result, unless main.py changed. A version is hashed
// again only when a file's stat changed. Revising a
// skill (NewSkill.Revise) writes a new version beside the old one, checks
// its --help, and only then swaps them; the old version is kept under
// skills/.history/<name>/<version>/ and can be restored.
//
// Confinement. A skill runs confined (internal/proc): it may write only
// its own directory and a private temporary one (its HOME and TMPDIR),
// read the system's files and its own, reach no network unless its
// skill.json declares a need and the person allowed it (AllowNetwork), and
// is held to resource limits (Runner.Limits). Where confinement is not
// available a skill is not run, unless the person chose to run skills
// unconfined (Runner.Unconfined), which each Result records. The spec says
// skills run without sandboxing; lumen confines them, because a skill the
// model wrote could otherwise read the person's keys and files.
package skill

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/llmkernels/kernels/internal/atomicfile"
	"github.com/llmkernels/kernels/internal/proc"
	"github.com/llmkernels/kernels/lumen/internal/filestat"
)

// BuiltinCreate is the name of the kernel's built-in ability to author a
// new skill; no skill directory may take it.
const BuiltinCreate = "create-skill"

// Skill is one directory under skills/.
type Skill struct {
	Name    string `json:"name"`
	Dir     string `json:"dir"`
	HasMain bool   `json:"has_main"`
}

// Runner runs the skills of one instance.
type Runner struct {
	Dir       string        // the skills directory
	Root      string        // the instance root, given to skills as LUMEN_DIR
	CacheFile string        // where --help results are cached
	ReadOnly  bool          // keep the cache in memory: write nothing
	Python    string        // interpreter for main.py; default python3
	Timeout   time.Duration // per run; default 60s
	OutputCap int           // bytes of stdout per run; default 64 KiB
	// Unconfined runs skills with the user's rights (the person's
	// --unconfined); Limits are a confined skill's resource limits.
	Unconfined bool
	Limits     proc.Limits
	// testWrite are more directories a confined skill may write: the tests
	// count --help runs in a file outside the skill.
	testWrite []string
	// testRun replaces proc.Run: the tests stand in for a machine without
	// confinement.
	testRun func(context.Context, proc.Cmd) (*proc.Result, error)
	// OnCheck, when set, is told of every --help run: once per version.
	OnCheck func(Check)

	mu     sync.Mutex            // guards the cache
	memory map[string]cacheEntry // the cache when ReadOnly, or when the file cannot be written

	memoMu sync.Mutex
	memo   map[string]versionMemo // by skill directory
}

// versionMemo is a directory's version with the fingerprint of its files'
// stats when it was hashed: while the fingerprint holds, the files are
// not read again.
type versionMemo struct {
	fingerprint [32]byte
	version     string
	at          int64 // when it was hashed, unix nanoseconds
}

func (r *Runner) python() string {
	if r.Python == "" {
		return "python3"
	}
	return r.Python
}

func (r *Runner) timeout() time.Duration {
	if r.Timeout <= 0 {
		return 60 * time.Second
	}
	return r.Timeout
}

func (r *Runner) outputCap() int {
	if r.OutputCap <= 0 {
		return 64 << 10
	}
	return r.OutputCap
}

// historyDir holds the versions skills were revised from.
const historyDir = ".history"

// List returns every directory under skills/, by name, saying whether it
// has its main.py.
func (r *Runner) List() ([]Skill, error) {
	entries, err := os.ReadDir(r.Dir)
	if err != nil {
		return nil, fmt.Errorf("skills directory %s: %w", r.Dir, err)
	}
	var out []Skill
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(r.Dir, e.Name())
		st, err := os.Stat(filepath.Join(dir, "main.py"))
		out = append(out, Skill{Name: e.Name(), Dir: dir, HasMain: err == nil && st.Mode().IsRegular()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ValidName says why name cannot be a skill's, nil when it can: a
// directory made by hand may have any name.
func ValidName(name string) error {
	if validName.MatchString(name) && name != BuiltinCreate {
		return nil
	}
	return fmt.Errorf("%q is not a valid skill name: use 1-40 lower-case letters, digits, - or _, starting with a letter (not %q); rename the directory", name, BuiltinCreate)
}

// Available reports whether name is a skill directory with main.py. Use
// Ready to know whether the kernel may count on it.
func (r *Runner) Available(name string) bool {
	if !validName.MatchString(name) {
		return false
	}
	st, err := os.Stat(filepath.Join(r.Dir, name, "main.py"))
	return err == nil && st.Mode().IsRegular()
}

// cacheEntry is the --help result of one version of a skill.
type cacheEntry struct {
	Version string    `json:"version"`
	OK      bool      `json:"ok"`
	Help    string    `json:"help,omitempty"`
	Error   string    `json:"error,omitempty"`
	Checked time.Time `json:"checked"`
}

// Check is what the kernel knows of a skill's current version.
type Check struct {
	Name    string    `json:"name"`
	Version string    `json:"version"` // "" when the skill has no main.py
	Checked bool      `json:"checked"` // --help has been run for this version
	OK      bool      `json:"ok"`      // and passed
	Help    string    `json:"help,omitempty"`
	Error   string    `json:"error,omitempty"`
	When    time.Time `json:"when,omitempty"`
}

// Cached says what is known of name's current version without running
// anything.
func (r *Runner) Cached(name string) (Check, error) {
	c := Check{Name: name}
	if err := ValidName(name); err != nil {
		c.Error = err.Error()
		return c, nil
	}
	if !r.Available(name) {
		c.Error = "no main.py"
		return c, nil
	}
	v, err := r.version(filepath.Join(r.Dir, name))
	if err != nil {
		return c, err
	}
	c.Version = v
	r.mu.Lock()
	e, ok := r.readCache()[name]
	r.mu.Unlock()
	if ok && e.Version == v {
		c.Checked, c.OK, c.Help, c.Error, c.When = true, e.OK, e.Help, e.Error, e.Checked
	}
	return c, nil
}

// Help returns the skill's --help output. It runs --help only when the
// current version has not been checked; a failure is cached too, and
// returned as an error until the skill changes.
func (r *Runner) Help(ctx context.Context, name string) (string, error) {
	if err := ValidName(name); err != nil {
		return "", err
	}
	if !r.Available(name) {
		return "", fmt.Errorf("skill %q: no %s (skills: %s)", name, filepath.Join(r.Dir, name, "main.py"), r.names())
	}
	c, err := r.Cached(name)
	if err != nil {
		return "", err
	}
	if !c.Checked {
		help, err := r.runHelp(ctx, name, filepath.Join(r.Dir, name))
		var unavailable *proc.UnavailableError
		if errors.As(err, &unavailable) {
			return "", err // says nothing of this version: not cached
		}
		e := cacheEntry{Version: c.Version, OK: err == nil, Help: help, Checked: time.Now().UTC()}
		if err != nil {
			e.Error = err.Error()
		}
		r.store(name, e)
		c.Checked, c.OK, c.Help, c.Error, c.When = true, e.OK, e.Help, e.Error, e.Checked
		if r.OnCheck != nil {
			r.OnCheck(c)
		}
	}
	if !c.OK {
		return "", fmt.Errorf("skill %s (version %s): %s", name, short(c.Version), c.Error)
	}
	return c.Help, nil
}

// Ready reports whether the kernel may count on the skill: its current
// version's --help passed (running it if it was never checked).
func (r *Runner) Ready(ctx context.Context, name string) bool {
	_, err := r.Help(ctx, name)
	return err == nil
}

func short(version string) string {
	if len(version) > 12 {
		return version[:12]
	}
	return version
}

func (r *Runner) names() string {
	skills, _ := r.List()
	var names []string
	for _, s := range skills {
		if s.HasMain {
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// readCache reads the cache file (and what this process could not write);
// a damaged file only costs --help runs.
func (r *Runner) readCache() map[string]cacheEntry {
	cache := map[string]cacheEntry{}
	if data, err := os.ReadFile(r.CacheFile); err == nil {
		if json.Unmarshal(data, &cache) != nil {
			cache = map[string]cacheEntry{}
		}
	}
	for name, e := range r.memory {
		cache[name] = e
	}
	return cache
}

// store records a --help result: in the cache file, or in memory when the
// instance is read-only or the file cannot be written.
func (r *Runner) store(name string, e cacheEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.memory == nil {
		r.memory = map[string]cacheEntry{}
	}
	if !r.ReadOnly {
		cache := r.readCache()
		cache[name] = e
		data, err := json.MarshalIndent(cache, "", "  ")
		if err == nil {
			if err = os.MkdirAll(filepath.Dir(r.CacheFile), 0o755); err == nil {
				err = atomicfile.Write(r.CacheFile, data, 0o644)
			}
		}
		if err == nil {
			delete(r.memory, name)
			return
		}
	}
	r.memory[name] = e
}

// skipDirs are left out of a skill's version: caches and environments
// that change without the skill changing.
var skipDirs = map[string]bool{"__pycache__": true, "venv": true, ".venv": true, "node_modules": true}

// Version is the SHA-256 of a skill directory's files: each one's path
// and content, in path order. Dot-files and skipDirs are left out.
func Version(dir string) (string, error) {
	h := sha256.New()
	err := versionFiles(dir, func(rel, p string, _ fs.DirEntry) error {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintf(h, "%s\x00%d\x00", rel, len(data)) // a hash never fails to take bytes
		h.Write(data)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("skill version of %s: %w", dir, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// versionFiles calls fn, in path order, for each regular file that makes
// a skill directory's version, with its slash-separated path relative to
// dir.
func versionFiles(dir string, fn func(rel, path string, d fs.DirEntry) error) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && (strings.HasPrefix(d.Name(), ".") || (d.IsDir() && skipDirs[d.Name()])) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		return fn(filepath.ToSlash(rel), p, d)
	})
}

// racyWindow covers the coarse clock file times are taken from: a file
// changed within it of being hashed may change again unseen by its stat.
const racyWindow = int64(time.Second)

// version is Version(dir), hashed again only when a file's size, times or
// inode differ from when it was last hashed (or changed within a clock
// tick of it): a skill of thousands of files is stat'ed at each check, not
// read.
func (r *Runner) version(dir string) (string, error) {
	h := sha256.New()
	var newest int64
	err := versionFiles(dir, func(rel, _ string, d fs.DirEntry) error {
		info, err := d.Info()
		if err != nil {
			return err
		}
		st := filestat.Of(info)
		newest = max(newest, st.Changed())
		_, _ = fmt.Fprintf(h, "%s\x00%d %d %d %d\x00", rel, st.Size, st.Mtime, st.Ctime, st.Ino) // a hash never fails to take bytes
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("skill version of %s: %w", dir, err)
	}
	var fp [32]byte
	h.Sum(fp[:0])
	r.memoMu.Lock()
	m, ok := r.memo[dir]
	r.memoMu.Unlock()
	if ok && m.fingerprint == fp && newest < m.at-racyWindow {
		return m.version, nil
	}
	at := time.Now().UnixNano()
	v, err := Version(dir)
	if err != nil {
		return "", err
	}
	r.memoMu.Lock()
	defer r.memoMu.Unlock()
	if r.memo == nil {
		r.memo = map[string]versionMemo{}
	}
	r.memo[dir] = versionMemo{fingerprint: fp, version: v, at: at}
	return v, nil
}

func (r *Runner) runHelp(ctx context.Context, name, dir string) (string, error) {
	out, err := r.run(ctx, name, dir, nil, nil, "--help")
	if err != nil {
		return "", fmt.Errorf("main.py --help failed: %w (every skill must describe itself with --help)", err)
	}
	help := strings.TrimSpace(string(out.stdout))
	if help == "" {
		return "", errors.New("main.py --help printed nothing; it must describe what the skill does, its input and its output")
	}
	return help, nil
}

// Request is what a skill reads on stdin.
type Request struct {
	Input     json.RawMessage `json:"input"`
	Situation string          `json:"situation"`
}

// Result is what a run of a skill gave.
type Result struct {
	Skill    string        `json:"skill"`
	OK       bool          `json:"ok"`
	Output   string        `json:"output"`            // the result for the kernel (JSON text or plain text)
	Display  string        `json:"display,omitempty"` // text for the person at the terminal
	Error    string        `json:"error,omitempty"`
	Stderr   string        `json:"stderr,omitempty"` // its last 2,000 bytes
	Duration time.Duration `json:"duration"`
	// Rewrote is the version the run left: the skill wrote files in its
	// own directory (notes, a cache). Its --help result carries over to
	// that version unless main.py itself changed.
	Rewrote string `json:"rewrote,omitempty"`
	// Unconfined: the skill ran with the user's rights (--unconfined).
	Unconfined bool `json:"unconfined,omitempty"`
	// Network is what the skill was allowed to reach.
	Network []string `json:"network,omitempty"`
}

// Invoke runs the skill with req on stdin. A skill that fails (non-zero
// exit, "ok": false, timeout, too much output) gives a Result with OK false
// and the reason in Error; err is only for a skill that cannot be started.
func (r *Runner) Invoke(ctx context.Context, name string, req Request) (*Result, error) {
	if !r.Available(name) {
		return nil, fmt.Errorf("skill %q: no %s (skills: %s)", name, filepath.Join(r.Dir, name, "main.py"), r.names())
	}
	if len(req.Input) == 0 {
		req.Input = json.RawMessage("null")
	}
	stdin, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("skill %s: input is not JSON: %w", name, err)
	}
	dir := filepath.Join(r.Dir, name)
	before, err := r.Cached(name)
	if err != nil {
		return nil, err
	}
	mainBefore, _ := os.ReadFile(filepath.Join(dir, "main.py")) // compared after the run; unreadable counts as changed
	_, network, err := r.Network(name)
	if err != nil {
		return &Result{Skill: name, Error: err.Error()}, nil // a skill.json it cannot run with: a failed run
	}
	start := time.Now()
	out, runErr := r.run(ctx, name, dir, stdin, network)
	res := &Result{Skill: name, Duration: time.Since(start), Unconfined: r.Unconfined, Network: network}
	r.carryOver(before, mainBefore, res)
	if out != nil {
		res.Stderr = string(out.stderr)
	}
	if runErr != nil {
		var startErr *startError
		if errors.As(runErr, &startErr) {
			return nil, runErr
		}
		res.Error = runErr.Error()
		return res, nil
	}
	res.OK = true
	res.Output = strings.TrimSpace(string(out.stdout))
	var resp struct {
		OK      *bool           `json:"ok"`
		Output  json.RawMessage `json:"output"`
		Display string          `json:"display"`
		Error   string          `json:"error"`
	}
	trimmed := bytes.TrimSpace(out.stdout)
	if len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(trimmed, &resp) == nil {
		res.Display = resp.Display
		res.Output = outputText(resp.Output)
		if resp.OK != nil && !*resp.OK {
			res.OK = false
			res.Error = resp.Error
			if res.Error == "" {
				res.Error = "the skill answered ok: false without an error message"
			}
		}
	}
	return res, nil
}

// carryOver notes in res a version the skill's run made by writing in its
// own directory, and gives that version the --help result of the one it
// ran as, when main.py is unchanged: data a skill keeps beside its code
// does not make it a new program to check.
func (r *Runner) carryOver(before Check, mainBefore []byte, res *Result) {
	dir := filepath.Join(r.Dir, before.Name)
	after, err := r.version(dir)
	if err != nil || before.Version == "" || after == before.Version {
		return
	}
	res.Rewrote = after
	mainAfter, err := os.ReadFile(filepath.Join(dir, "main.py"))
	if err != nil || !before.Checked || !before.OK || mainBefore == nil || !bytes.Equal(mainBefore, mainAfter) {
		return
	}
	r.store(before.Name, cacheEntry{Version: after, OK: true, Help: before.Help, Checked: before.When})
}

// outputText is a JSON string's text, or any other JSON value as written.
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

type runOutput struct {
	stdout []byte
	stderr []byte
}

type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// run starts main.py in dir with args, feeding stdin, under the timeout
// and output cap, through the one subprocess runner (internal/proc): the
// skill's whole process group is killed at the timeout, on overflow and
// with the kernel, and provider secrets are not passed on.
func (r *Runner) run(ctx context.Context, name, dir string, stdin []byte, network []string, args ...string) (*runOutput, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	c := proc.Cmd{Name: r.python(), Args: append([]string{"main.py"}, args...), Dir: dir,
		Env: []string{"LUMEN_DIR=" + r.Root, "LUMEN_SKILL=" + name}, Stdin: bytes.NewReader(stdin),
		MaxOutput: r.outputCap(), StopOnOverflow: true}
	if !r.Unconfined {
		c.Confine = &proc.Confinement{Network: network, Limits: r.Limits, Write: r.testWrite}
	}
	run := proc.Run
	if r.testRun != nil {
		run = r.testRun
	}
	res, err := run(ctx, c)
	var unavailable *proc.UnavailableError
	if errors.As(err, &unavailable) {
		return nil, fmt.Errorf("skill %s was not run: %w", name, err)
	}
	if err != nil {
		return nil, &startError{fmt.Errorf("skill %s: cannot start %s main.py: %w (is %s installed? set the interpreter with --python)", name, r.python(), err, r.python())}
	}
	stderr := res.Stderr
	if len(stderr) > stderrKeep {
		stderr = stderr[len(stderr)-stderrKeep:]
	}
	out := &runOutput{stdout: res.Stdout, stderr: stderr}
	switch {
	// Stopped for its output, or past the cap and gone before the kill
	// reached it: either way the answer is cut, not a success.
	case errors.Is(res.Stopped, proc.ErrOutputLimit) || res.StdoutDropped > 0:
		return out, fmt.Errorf("skill %s wrote more than %d bytes to stdout and was stopped (the output cap, --skill-output-cap)", name, r.outputCap())
	case errors.Is(res.Stopped, context.DeadlineExceeded):
		return out, fmt.Errorf("skill %s did not finish within %s and was killed (the timeout, --skill-timeout)", name, r.timeout())
	case !res.OK():
		msg := strings.TrimSpace(string(out.stderr))
		if msg == "" {
			msg = "no stderr"
		}
		return out, fmt.Errorf("skill %s failed: %v: %s", name, res.Err(), msg)
	}
	return out, nil
}

// stderrKeep is how much of a failing skill's stderr (its end) is quoted.
const stderrKeep = 2000

var validName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,39}$`)

// NewSkill is what the create-skill tool receives from the LLM.
type NewSkill struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Files       map[string]string `json:"files"`
	Revise      bool              `json:"revise,omitempty"`
}

// Created is what Create made.
type Created struct {
	Help    string `json:"help"`
	Version string `json:"version"`
	// Replaced is the version a revision replaced, kept in the history.
	Replaced string `json:"replaced,omitempty"`
}

// Create writes a skill directory from spec and runs its --help; only when
// --help succeeds is the directory moved into skills/. A new name needs no
// Revise; an existing one needs it: the revision starts from the current
// files, the files given replace or add to them, and the current version
// is moved to skills/.history/<name>/<version>/ at the moment the new one
// takes its place.
func (r *Runner) Create(ctx context.Context, spec NewSkill) (*Created, error) {
	if !validName.MatchString(spec.Name) || spec.Name == BuiltinCreate {
		return nil, fmt.Errorf("skill name %q: use 1-40 lower-case letters, digits, - or _, starting with a letter (not %q)", spec.Name, BuiltinCreate)
	}
	if r.ReadOnly {
		return nil, errors.New("skills: the instance is open read-only")
	}
	unlock, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	final := filepath.Join(r.Dir, spec.Name)
	_, statErr := os.Stat(final)
	exists := statErr == nil
	switch {
	case exists && !spec.Revise:
		return nil, fmt.Errorf("skill %q already exists at %s: set revise to true to replace it with a new version (the current one is kept and can be restored), or choose another name", spec.Name, final)
	case !exists && spec.Revise:
		return nil, fmt.Errorf("skill %q does not exist, so it cannot be revised (skills: %s): set revise to false to create it", spec.Name, r.names())
	case !exists:
		if _, ok := spec.Files["main.py"]; !ok {
			return nil, fmt.Errorf("skill %q: files must include main.py, the entry point", spec.Name)
		}
	}
	if len(spec.Files) == 0 {
		return nil, fmt.Errorf("skill %q: no files given", spec.Name)
	}
	tmp, err := os.MkdirTemp(r.Dir, ".new-"+spec.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("skill %q: %w", spec.Name, err)
	}
	// Gone once renamed; cleans up a failed attempt. A leftover .new-*
	// directory is hidden from List and costs only disk.
	defer func() { _ = os.RemoveAll(tmp) }()
	if exists {
		if err := copyDir(final, tmp); err != nil {
			return nil, fmt.Errorf("skill %q: copy the current version: %w", spec.Name, err)
		}
	}
	for rel, content := range spec.Files {
		clean := filepath.Clean(rel)
		if filepath.IsAbs(rel) || clean == "." || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
			return nil, fmt.Errorf("skill %q: file path %q leaves the skill directory: use a relative path inside it", spec.Name, rel)
		}
		path := filepath.Join(tmp, clean)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("skill %q: %w", spec.Name, err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return nil, fmt.Errorf("skill %q: %w", spec.Name, err)
		}
	}
	return r.install(ctx, spec.Name, tmp, exists)
}

// install checks the --help of the skill in dir and, when it passes, puts
// dir in place of skills/<name>/, moving the current version (if any) to
// the history first.
func (r *Runner) install(ctx context.Context, name, dir string, replace bool) (*Created, error) {
	version, err := Version(dir)
	if err != nil {
		return nil, err
	}
	help, err := r.runHelp(ctx, name, dir)
	if err != nil {
		return nil, fmt.Errorf("skill %s: %w", name, err)
	}
	final := filepath.Join(r.Dir, name)
	out := &Created{Help: help, Version: version}
	if replace {
		current, err := Version(final)
		if err != nil {
			return nil, err
		}
		if current == version {
			return nil, fmt.Errorf("skill %s: the revision changes nothing (version %s)", name, short(version))
		}
		kept := filepath.Join(r.Dir, historyDir, name, short(current))
		if err := os.MkdirAll(filepath.Dir(kept), 0o755); err != nil {
			return nil, err
		}
		// The same version kept before holds identical content; if it
		// cannot be removed, the rename below says so.
		_ = os.RemoveAll(kept)
		if err := os.Rename(final, kept); err != nil {
			return nil, fmt.Errorf("skill %s: keep version %s: %w", name, short(current), err)
		}
		mark, _ := json.Marshal(map[string]any{"version": current, "replaced": time.Now().UTC()})
		if err := os.WriteFile(filepath.Join(kept, versionMark), mark, 0o644); err != nil {
			return nil, err
		}
		out.Replaced = current
	}
	if err := os.Rename(dir, final); err != nil {
		if out.Replaced != "" {
			if rerr := os.Rename(filepath.Join(r.Dir, historyDir, name, short(out.Replaced)), final); rerr != nil { // put the old one back
				return nil, fmt.Errorf("skill %q: %w; and putting version %s back failed: %v (it is in %s)", name, err, short(out.Replaced), rerr, filepath.Join(historyDir, name))
			}
		}
		return nil, fmt.Errorf("skill %q: %w", name, err)
	}
	r.store(name, cacheEntry{Version: version, OK: true, Help: help, Checked: time.Now().UTC()})
	return out, nil
}

// versionMark records, in a kept version's directory, when it was replaced.
const versionMark = ".lumen-version.json"

// Kept is a version of a skill kept in the history.
type Kept struct {
	Version  string    `json:"version"`
	Replaced time.Time `json:"replaced"`
	Dir      string    `json:"dir"`
}

// History lists the kept versions of a skill, oldest first.
func (r *Runner) History(name string) ([]Kept, error) {
	if !validName.MatchString(name) {
		return nil, fmt.Errorf("skill name %q is not valid", name)
	}
	base := filepath.Join(r.Dir, historyDir, name)
	entries, err := os.ReadDir(base)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Kept
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		k := Kept{Version: e.Name(), Dir: filepath.Join(base, e.Name())}
		var mark struct {
			Version  string    `json:"version"`
			Replaced time.Time `json:"replaced"`
		}
		if data, err := os.ReadFile(filepath.Join(k.Dir, versionMark)); err == nil && json.Unmarshal(data, &mark) == nil {
			k.Version, k.Replaced = mark.Version, mark.Replaced
		}
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Replaced.Before(out[j].Replaced) })
	return out, nil
}

// Restore makes a kept version (a prefix of its hash is enough) the
// current one again, keeping the current one in the history; its --help
// must pass first.
func (r *Runner) Restore(ctx context.Context, name, version string) (*Created, error) {
	if r.ReadOnly {
		return nil, errors.New("skills: the instance is open read-only")
	}
	kept, err := r.History(name)
	if err != nil {
		return nil, err
	}
	var match []Kept
	for _, k := range kept {
		if version != "" && strings.HasPrefix(k.Version, version) {
			match = append(match, k)
		}
	}
	if len(match) != 1 {
		var all []string
		for _, k := range kept {
			all = append(all, short(k.Version))
		}
		return nil, fmt.Errorf("skill %s: %d kept versions match %q (kept: %s)", name, len(match), version, orNone(all))
	}
	unlock, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	tmp, err := os.MkdirTemp(r.Dir, ".restore-"+name+"-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }() // gone once renamed; a leftover is hidden from List
	if err := copyDir(match[0].Dir, tmp); err != nil {
		return nil, err
	}
	if err := os.Remove(filepath.Join(tmp, versionMark)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	_, statErr := os.Stat(filepath.Join(r.Dir, name))
	return r.install(ctx, name, tmp, statErr == nil)
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// lock serialises changes to skills/ across processes.
func (r *Runner) lock() (func(), error) {
	path := filepath.Join(r.Root, ".lumen", "skills.lock")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return atomicfile.Lock(path)
}

// copyDir copies the regular files under src into dst, keeping modes.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm())
	})
}
