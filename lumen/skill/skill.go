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
// the skill does, its input and its output; the kernel reads it before
// using a skill and caches it until main.py changes.
//
// There is no sandbox: a skill runs with the user's rights, like any
// program the user starts.
package skill

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/llmkernels/kernels/internal/atomicfile"
	"github.com/llmkernels/kernels/internal/proc"
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
	CacheFile string        // where --help outputs are cached
	Python    string        // interpreter for main.py; default python3
	Timeout   time.Duration // per run; default 60s
	OutputCap int           // bytes of stdout per run; default 64 KiB

	mu sync.Mutex // guards the cache file within this process
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

// Available reports whether name is a skill the kernel can invoke: a
// directory with main.py.
func (r *Runner) Available(name string) bool {
	if !validName.MatchString(name) {
		return false
	}
	st, err := os.Stat(filepath.Join(r.Dir, name, "main.py"))
	return err == nil && st.Mode().IsRegular()
}

type cacheEntry struct {
	SHA256 string `json:"sha256"`
	Help   string `json:"help"`
}

// Help returns the skill's --help output, from the cache when main.py has
// not changed since it was read.
func (r *Runner) Help(ctx context.Context, name string) (string, error) {
	if !r.Available(name) {
		return "", fmt.Errorf("skill %q: no %s (skills: %s)", name, filepath.Join(r.Dir, name, "main.py"), r.names())
	}
	dir := filepath.Join(r.Dir, name)
	sum, err := fileHash(filepath.Join(dir, "main.py"))
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	cache := r.readCache()
	r.mu.Unlock()
	if c, ok := cache[name]; ok && c.SHA256 == sum {
		return c.Help, nil
	}
	help, err := r.runHelp(ctx, name, dir)
	if err != nil {
		return "", err
	}
	r.remember(name, sum, help)
	return help, nil
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

func (r *Runner) readCache() map[string]cacheEntry {
	cache := map[string]cacheEntry{}
	if data, err := os.ReadFile(r.CacheFile); err == nil {
		if err := json.Unmarshal(data, &cache); err != nil {
			return map[string]cacheEntry{} // a damaged cache is only re-read from the skills
		}
	}
	return cache
}

func (r *Runner) remember(name, sum, help string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cache := r.readCache()
	cache[name] = cacheEntry{SHA256: sum, Help: help}
	data, _ := json.MarshalIndent(cache, "", "  ") // strings only: always encodes
	// The cache is derived: a lost write costs one --help run later, which
	// is no reason to fail the skill run that produced it.
	if err := os.MkdirAll(filepath.Dir(r.CacheFile), 0o755); err == nil {
		_ = atomicfile.Write(r.CacheFile, data, 0o644)
	}
}

func fileHash(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("skill: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

func (r *Runner) runHelp(ctx context.Context, name, dir string) (string, error) {
	out, err := r.run(ctx, name, dir, nil, "--help")
	if err != nil {
		return "", fmt.Errorf("skill %s: main.py --help failed: %w (every skill must describe itself with --help)", name, err)
	}
	help := strings.TrimSpace(string(out.stdout))
	if help == "" {
		return "", fmt.Errorf("skill %s: main.py --help printed nothing; it must describe what the skill does, its input and its output", name)
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
	start := time.Now()
	out, runErr := r.run(ctx, name, filepath.Join(r.Dir, name), stdin)
	res := &Result{Skill: name, Duration: time.Since(start)}
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
func (r *Runner) run(ctx context.Context, name, dir string, stdin []byte, args ...string) (*runOutput, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	res, err := proc.Run(ctx, proc.Cmd{Name: r.python(), Args: append([]string{"main.py"}, args...), Dir: dir,
		Env: []string{"LUMEN_DIR=" + r.Root, "LUMEN_SKILL=" + name}, Stdin: bytes.NewReader(stdin),
		MaxOutput: r.outputCap(), StopOnOverflow: true})
	if err != nil {
		return nil, &startError{fmt.Errorf("skill %s: cannot start %s main.py: %w (is %s installed? set the interpreter with --python)", name, r.python(), err, r.python())}
	}
	stderr := res.Stderr
	if len(stderr) > stderrKeep {
		stderr = stderr[len(stderr)-stderrKeep:]
	}
	out := &runOutput{stdout: res.Stdout, stderr: stderr}
	switch {
	case errors.Is(res.Stopped, proc.ErrOutputLimit):
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
	Name        string            `json:"name" jsonschema:"description=directory name: lower-case letters, digits, - and _; starts with a letter"`
	Description string            `json:"description" jsonschema:"description=one sentence: what the skill does"`
	Files       map[string]string `json:"files" jsonschema:"description=relative path -> file content; must include main.py, which must implement --help and the stdin/stdout protocol"`
}

// Create writes a new skill directory from spec and runs its --help; only
// when --help succeeds is the directory moved into skills/ and the skill
// available. It returns the --help text.
func (r *Runner) Create(ctx context.Context, spec NewSkill) (string, error) {
	if !validName.MatchString(spec.Name) || spec.Name == BuiltinCreate {
		return "", fmt.Errorf("skill name %q: use 1-40 lower-case letters, digits, - or _, starting with a letter (not %q)", spec.Name, BuiltinCreate)
	}
	final := filepath.Join(r.Dir, spec.Name)
	if _, err := os.Stat(final); err == nil {
		return "", fmt.Errorf("skill %q already exists at %s: choose another name", spec.Name, final)
	}
	if _, ok := spec.Files["main.py"]; !ok {
		return "", fmt.Errorf("skill %q: files must include main.py, the entry point", spec.Name)
	}
	tmp, err := os.MkdirTemp(r.Dir, ".new-"+spec.Name+"-")
	if err != nil {
		return "", fmt.Errorf("skill %q: %w", spec.Name, err)
	}
	// Gone once renamed; cleans up a failed attempt. A leftover .new-*
	// directory is skipped by List and changes nothing, so there is no
	// error to report here.
	defer func() { _ = os.RemoveAll(tmp) }()
	for rel, content := range spec.Files {
		clean := filepath.Clean(rel)
		if filepath.IsAbs(rel) || clean == "." || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
			return "", fmt.Errorf("skill %q: file path %q leaves the skill directory: use a relative path inside it", spec.Name, rel)
		}
		path := filepath.Join(tmp, clean)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", fmt.Errorf("skill %q: %w", spec.Name, err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return "", fmt.Errorf("skill %q: %w", spec.Name, err)
		}
	}
	help, err := r.runHelp(ctx, spec.Name, tmp)
	if err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", fmt.Errorf("skill %q: %w", spec.Name, err)
	}
	sum, err := fileHash(filepath.Join(final, "main.py"))
	if err != nil {
		return "", err
	}
	r.remember(spec.Name, sum, help)
	return help, nil
}
