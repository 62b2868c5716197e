// Package config reads the settings the three kernel CLIs share from the
// two places a person keeps them, the environment and one config file, and
// says where each value came from. Flags and defaults belong to the
// commands (cmd/internal/cli), which put them above and below these two.
//
// The file is TOML, by default $XDG_CONFIG_HOME/llmkernels/config.toml
// (~/.config/llmkernels/config.toml without XDG_CONFIG_HOME); --config
// FILE or LLMKERNELS_CONFIG names another. Every key has an environment
// variable: LLMKERNELS_ and the key in capitals, its dots as underscores
// (hermitcrab.models.light is LLMKERNELS_HERMITCRAB_MODELS_LIGHT). The keys
// and what they mean: docs/configuration.md.
package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// EnvPrefix starts every environment variable of a setting.
const EnvPrefix = "LLMKERNELS_"

// EnvFile names the config file, as --config does.
const EnvFile = EnvPrefix + "CONFIG"

// Keys of the file, each with its environment variable (Env). Prices is a
// table of model families in the file; its variable, like --prices, names
// a JSON file of them instead.
const (
	Provider = "provider"
	Model    = "model"
	Fallback = "fallback"
	BaseURL  = "base_url"
	Beta     = "beta"
	Script   = "script"
	Prices   = "prices"
	NoCache  = "no_cache"
	Output   = "output"
)

// Aliases are environment variables read, after the key's own, under
// names from before the config file, by key. LLM_PROVIDER was documented.
var Aliases = map[string]string{Provider: "LLM_PROVIDER"}

// Env is the environment variable of key.
func Env(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// Price is a model family's price in the file, in USD per million tokens
// (docs/configuration.md#prices).
type Price struct {
	Input          float64 `toml:"input"`
	Output         float64 `toml:"output"`
	CacheWrite     float64 `toml:"cache_write"`
	CacheWrite1h   float64 `toml:"cache_write_1h"`
	CacheRead      float64 `toml:"cache_read"`
	LongPromptOver int     `toml:"long_prompt_over"`
	LongPrompt     *Price  `toml:"long_prompt"`
}

// document is the file's shape: every key it may hold. A pointer is nil
// when the key is absent.
type document struct {
	Provider   *string          `toml:"provider"`
	Model      *string          `toml:"model"`
	Fallback   *[]string        `toml:"fallback"`
	BaseURL    *string          `toml:"base_url"`
	Beta       *[]string        `toml:"beta"`
	Script     *string          `toml:"script"`
	Prices     map[string]Price `toml:"prices"`
	NoCache    *bool            `toml:"no_cache"`
	Output     *string          `toml:"output"`
	Hermitcrab struct {
		Model  *string `toml:"model"`
		Models struct {
			Light   *string `toml:"light"`
			Present *string `toml:"present"`
			Deep    *string `toml:"deep"`
		} `toml:"models"`
	} `toml:"hermitcrab"`
	Lumen struct {
		Model *string `toml:"model"`
	} `toml:"lumen"`
	Solve struct {
		Model *string `toml:"model"`
	} `toml:"solve"`
}

// value is the key's value in the document, nil when absent.
func (d *document) value(key string) any {
	strs := map[string]*string{Provider: d.Provider, Model: d.Model, BaseURL: d.BaseURL, Script: d.Script, Output: d.Output,
		"hermitcrab.model": d.Hermitcrab.Model, "hermitcrab.models.light": d.Hermitcrab.Models.Light,
		"hermitcrab.models.present": d.Hermitcrab.Models.Present, "hermitcrab.models.deep": d.Hermitcrab.Models.Deep,
		"lumen.model": d.Lumen.Model, "solve.model": d.Solve.Model}
	lists := map[string]*[]string{Fallback: d.Fallback, Beta: d.Beta}
	switch {
	case strs[key] != nil:
		return *strs[key]
	case lists[key] != nil:
		return *lists[key]
	case key == NoCache && d.NoCache != nil:
		return *d.NoCache
	}
	return nil
}

// keys are the document's keys by table, for the did-you-mean of an
// unknown one. prices.* are model families, any name.
var keys = map[string][]string{
	"":                  {Provider, Model, Fallback, BaseURL, Beta, Script, Prices, NoCache, Output, "hermitcrab", "lumen", "solve"},
	"hermitcrab":        {"model", "models"},
	"hermitcrab.models": {"light", "present", "deep"},
	"lumen":             {"model"},
	"solve":             {"model"},
	"prices.*":          {"input", "output", "cache_write", "cache_write_1h", "cache_read", "long_prompt_over", "long_prompt"},
}

// Source is where a value came from.
type Source struct {
	Kind string // "flag", "env", "file" or "default"
	// Name is the flag (--model), the variable (LLMKERNELS_MODEL), the
	// file with the line and key (/home/me/.config/llmkernels/config.toml:3
	// (lumen.model)), or for a default what it is (lumen's default for
	// anthropic); "" when there is nothing to say.
	Name string
}

// File is a config file as read: absent (Found false) when the default
// path holds none.
type File struct {
	Path  string
	Found bool
	// From says how the path was chosen: "--config", EnvFile, or "" for
	// the default location.
	From  string
	doc   document
	lines map[string]int // dotted key → line
}

// Where is the source of the file's value for key.
func (f *File) Where(key string) Source {
	loc := f.Path
	n := f.lines[key]
	for k, line := range f.lines { // a table given by its subtables: the first
		if strings.HasPrefix(k, key+".") && (n == 0 || line < n) {
			n = line
		}
	}
	if n > 0 {
		loc += ":" + strconv.Itoa(n)
	}
	return Source{Kind: "file", Name: loc + " (" + key + ")"}
}

// Prices are the file's price families, nil when it holds none.
func (f *File) Prices() map[string]Price { return f.doc.Prices }

// DefaultPath is $XDG_CONFIG_HOME/llmkernels/config.toml, else
// ~/.config/llmkernels/config.toml; "" when there is no home directory. A
// relative XDG_CONFIG_HOME is ignored, as the XDG specification says.
func DefaultPath(getenv func(string) string) string {
	dir := getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(dir) {
		home := getenv("HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return ""
			}
			home = h
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "llmkernels", "config.toml")
}

// Load reads the config file: flagPath when --config was given, else the
// one LLMKERNELS_CONFIG names, else the default path. A file named by the
// flag or the variable must exist; at the default path none is needed.
// Every mistake in it is a *FileError naming the file, the line and the
// key.
func Load(flagPath string, getenv func(string) string) (*File, error) {
	f := &File{Path: flagPath, From: "--config"}
	if flagPath == "" {
		f.Path, f.From = getenv(EnvFile), EnvFile
	}
	if f.Path == "" {
		f.Path, f.From = DefaultPath(getenv), ""
		if f.Path == "" {
			return f, nil
		}
	}
	data, err := readConfig(f.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && f.From == "":
		return f, nil
	case errors.Is(err, fs.ErrPermission) && f.From == "" && !visible(f.Path):
		// A directory on the way the process may not search (a command
		// run as another user in someone's home): there is no file it
		// could use, as when none is there. One it can see but not read
		// is a mistake to name.
		return f, nil
	case err != nil && f.From != "":
		return nil, &FileError{Path: f.Path, Problems: []string{fmt.Sprintf("cannot read the config file %s names: %v", f.From, unwrapPath(err))}}
	case err != nil:
		return nil, &FileError{Path: f.Path, Problems: []string{fmt.Sprintf("cannot read it: %v", unwrapPath(err))}}
	}
	f.Found = true
	if err := f.parse(data); err != nil {
		return nil, err
	}
	return f, nil
}

// maxSize bounds the file read: a config file is a few lines, and a path
// such as /dev/zero would otherwise be read until memory runs out.
const maxSize = 1 << 20

// readConfig reads the file at path, at most maxSize bytes of it.
func readConfig(path string) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = file.Close() }() // read only: what was read is the answer
	data, err := io.ReadAll(io.LimitReader(file, maxSize+1))
	if err == nil && len(data) > maxSize {
		err = fmt.Errorf("it is larger than %d MiB: is it a config file?", maxSize>>20)
	}
	return data, err
}

// visible reports whether the process can see path (stat it), whatever it
// may do with it.
func visible(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// unwrapPath is the cause of a path error, whose path the message gives.
func unwrapPath(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}

// FileError is a config file that cannot be used: each problem with its
// line and key. The commands treat it as a usage error.
type FileError struct {
	Path     string
	Problems []string // "line 3: unknown key "modle" (did you mean "model"?)"
}

func (e *FileError) Error() string {
	return "config file " + e.Path + ": " + strings.Join(e.Problems, "; ")
}

// UsageError marks the error as the invocation's (exit 2).
func (e *FileError) UsageError() bool { return true }

// parse reads data into the document. Every problem is listed, in the
// order of its lines: the file is checked key by key against what each
// key takes before it is decoded, as the decoder stops at the first.
func (f *File) parse(data []byte) error {
	// A byte-order mark, which some editors (Notepad) write, is no key.
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	var tree map[string]any
	if err := toml.Unmarshal(data, &tree); err != nil {
		// TOML that does not parse: the parser stops at its first problem.
		line := 0
		if de, ok := errors.AsType[*toml.DecodeError](err); ok {
			line, _ = de.Position()
		}
		return &FileError{Path: f.Path, Problems: []string{fmt.Sprintf("line %d: %s", line, strings.TrimPrefix(err.Error(), "toml: "))}}
	}
	f.lines = keyLines(data)
	type problem struct {
		line int
		text string
	}
	var problems []problem
	var check func(table []string, t map[string]any)
	check = func(table []string, t map[string]any) {
		for name, v := range t {
			key := append(slices.Clone(table), name)
			dotted := strings.Join(key, ".")
			line := f.lines[dotted]
			known := keys[strings.Join(table, ".")]
			if len(table) >= 2 && table[0] == Prices {
				known = keys["prices.*"]
			}
			family := len(table) == 1 && table[0] == Prices // any name is a family
			if !family && !slices.Contains(known, name) {
				problems = append(problems, problem{line, unknownKey(key)})
				continue
			}
			if family && strings.TrimSpace(name) == "" {
				// Every model's name starts with "": it would replace the
				// whole built-in table, and price unknown models, unwarned.
				problems = append(problems, problem{line, `prices."": a family with no name would price every model; name the family, e.g. [prices."claude-sonnet-4"]`})
				continue
			}
			kind := kindOf(key)
			sub, isTable := v.(map[string]any)
			o, isString := v.(string)
			switch {
			case !kind.fits(v):
				problems = append(problems, problem{line, dotted + ": give " + kind.want})
			case isTable:
				check(key, sub)
			case (name == Fallback || name == Beta) && slices.ContainsFunc(v.([]any), func(e any) bool { return strings.TrimSpace(e.(string)) == "" }):
				// An empty name is no model (or beta) to try: it showed as
				// ", claude-x" and was passed on as a model named "".
				problems = append(problems, problem{line, dotted + `: an empty name in the list: remove it, or name each, e.g. ["claude-haiku-4-5"]`})
			case isString && dotted == Output && !slices.Contains(OutputLevels, o):
				problems = append(problems, problem{line, fmt.Sprintf("output %q: choose %s", o, strings.Join(OutputLevels, ", "))})
			}
		}
	}
	check(nil, tree)
	if len(problems) > 0 {
		slices.SortFunc(problems, func(a, b problem) int { return cmp.Or(a.line-b.line, strings.Compare(a.text, b.text)) })
		ferr := &FileError{Path: f.Path}
		for _, p := range problems {
			ferr.Problems = append(ferr.Problems, fmt.Sprintf("line %d: %s", p.line, p.text))
		}
		return ferr
	}
	if err := toml.Unmarshal(data, &f.doc); err != nil { // checked above: cannot fail
		return &FileError{Path: f.Path, Problems: []string{err.Error()}}
	}
	return nil
}

// maxPrice bounds a price, in USD per million tokens, as llm.LoadPrices
// bounds a --prices file's (llm.MaxPrice; this package imports nothing
// above it).
const maxPrice = 1e6

// kind is what a key takes: whether a value fits, and how to say so.
type kind struct {
	fits func(any) bool
	want string
}

func isTable(v any) bool { _, ok := v.(map[string]any); return ok }

// kindOf is what key takes; a string unless it is one of the others.
func kindOf(key []string) kind {
	name := key[len(key)-1]
	switch {
	case len(key) == 1 && name == Prices:
		return kind{isTable, `tables of prices, e.g. [prices."claude-sonnet-4"] with input = 3, output = 15`}
	case key[0] == Prices && len(key) == 2:
		return kind{isTable, `a table of prices, e.g. [prices."claude-sonnet-4"] with input = 3, output = 15`}
	case key[0] == Prices && name == "long_prompt_over":
		return kind{func(v any) bool { n, ok := v.(int64); return ok && n >= 0 }, "a whole number of tokens"}
	case key[0] == Prices && name == "long_prompt":
		return kind{isTable, "a table of prices"}
	case key[0] == Prices:
		return kind{func(v any) bool {
			var x float64
			switch n := v.(type) {
			case int64:
				x = float64(n)
			case float64:
				x = n
			default:
				return false
			}
			return x >= 0 && x <= maxPrice // NaN is neither
		}, fmt.Sprintf("a number of US dollars per million tokens, from 0 to %d", int(maxPrice))}
	case name == Fallback || name == Beta:
		return kind{func(v any) bool {
			list, ok := v.([]any)
			return ok && !slices.ContainsFunc(list, func(e any) bool { _, s := e.(string); return !s })
		}, `a list of strings, e.g. ["a", "b"]`}
	case name == NoCache:
		return kind{func(v any) bool { _, ok := v.(bool); return ok }, "true or false"}
	case len(key) == 1 && slices.Contains([]string{"hermitcrab", "lumen", "solve"}, name), strings.Join(key, ".") == "hermitcrab.models":
		return kind{isTable, "a table: [" + strings.Join(key, ".") + "]"}
	}
	return kind{func(v any) bool { _, ok := v.(string); return ok }, `a string in quotes, e.g. "claude-sonnet-4-5"`}
}

// OutputLevels are the values of output (--quiet, --verbose).
var OutputLevels = []string{"quiet", "normal", "verbose"}

// unknownKey says that key is not one the file may hold, with the key
// of its table nearest in spelling when one is near.
func unknownKey(key toml.Key) string {
	table, name := strings.Join(key[:len(key)-1], "."), key[len(key)-1]
	known := keys[table]
	if len(key) >= 2 && key[0] == Prices {
		known = keys["prices.*"]
	}
	msg := fmt.Sprintf("unknown key %q", strings.Join(key, "."))
	if near := nearest(name, known); near != "" {
		if table != "" {
			near = table + "." + near
		}
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	return msg
}

// nearest is the word of known nearest to s in spelling, if it is near
// enough to be a typo of it (at most a third of its letters differ).
func nearest(s string, known []string) string {
	best, bestD := "", 0
	for _, k := range known {
		d := distance(strings.ToLower(s), k)
		if d <= max(1, len(k)/3) && (best == "" || d < bestD) {
			best, bestD = k, d
		}
	}
	return best
}

// Nearest is the word of known s is most likely a typo of, or "".
func Nearest(s string, known []string) string { return nearest(s, known) }

// distance is the edit distance between a and b in bytes, a swap of two
// neighbours counting as one edit (modle is one edit from model).
func distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// keyLines maps every dotted key the document sets (and every table it
// opens) to its line. The document has decoded already, so it parses.
func keyLines(data []byte) map[string]int {
	lines := map[string]int{}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	keyOf := func(n *unstable.Node) ([]string, int) {
		var parts []string
		line := 0
		it := n.Key()
		for it.Next() {
			k := it.Node()
			if line == 0 {
				line = p.Shape(k.Raw).Start.Line
			}
			parts = append(parts, string(k.Data))
		}
		return parts, line
	}
	var inline func(prefix []string, n *unstable.Node, line int)
	inline = func(prefix []string, n *unstable.Node, line int) {
		it := n.Children()
		for it.Next() {
			kv := it.Node()
			if kv.Kind != unstable.KeyValue {
				continue
			}
			parts, _ := keyOf(kv)
			full := append(slices.Clone(prefix), parts...)
			lines[strings.Join(full, ".")] = line
			if v := kv.Value(); v.Kind == unstable.InlineTable {
				inline(full, v, line)
			}
		}
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			parts, line := keyOf(e)
			table = parts
			lines[strings.Join(table, ".")] = line
		case unstable.KeyValue:
			parts, line := keyOf(e)
			full := append(slices.Clone(table), parts...)
			lines[strings.Join(full, ".")] = line
			if v := e.Value(); v.Kind == unstable.InlineTable {
				inline(full, v, line)
			}
		}
	}
	return lines
}

// Layers are the two places besides flags and defaults a setting may come
// from, the environment first, then the file.
type Layers struct {
	Getenv func(string) string
	File   *File
}

// String is key's value from the environment or the file; ok is false
// when neither sets it.
func (l Layers) String(key string) (v string, from Source, ok bool) {
	if name, val := l.env(key); name != "" {
		return val, Source{Kind: "env", Name: name}, true
	}
	if s, isString := l.file(key).(string); isString {
		return s, l.File.Where(key), true
	}
	return "", Source{}, false
}

// List is key's value as a list: comma-separated in the environment, an
// array in the file.
func (l Layers) List(key string) (v []string, from Source, ok bool) {
	if name, val := l.env(key); name != "" {
		for _, s := range strings.Split(val, ",") {
			if s = strings.TrimSpace(s); s != "" {
				v = append(v, s)
			}
		}
		return v, Source{Kind: "env", Name: name}, true
	}
	if list, isList := l.file(key).([]string); isList {
		return list, l.File.Where(key), true
	}
	return nil, Source{}, false
}

// Bool is key's value as true or false: in the environment 1, true, yes,
// on, 0, false, no, off (any case), or empty for unset; a boolean in the
// file. Any other word in the environment is an error naming the variable.
func (l Layers) Bool(key string) (v bool, from Source, ok bool, err error) {
	if name, val := l.env(key); name != "" {
		switch strings.ToLower(strings.TrimSpace(val)) {
		case "1", "true", "yes", "on":
			return true, Source{Kind: "env", Name: name}, true, nil
		case "0", "false", "no", "off":
			return false, Source{Kind: "env", Name: name}, true, nil
		}
		return false, Source{}, false, &EnvError{Name: name, Value: val, Want: "true or false (1, yes, on; 0, no, off)"}
	}
	if b, isBool := l.file(key).(bool); isBool {
		return b, l.File.Where(key), true, nil
	}
	return false, Source{}, false, nil
}

// EnvError is an environment variable whose value means nothing for its
// setting; the commands treat it as a usage error.
type EnvError struct{ Name, Value, Want string }

func (e *EnvError) Error() string { return fmt.Sprintf("%s=%q: give %s", e.Name, e.Value, e.Want) }

// UsageError marks the error as the invocation's (exit 2).
func (e *EnvError) UsageError() bool { return true }

// env is the variable that sets key and its value: the key's own, else its
// alias; "" when neither is set (an empty variable counts as unset).
func (l Layers) env(key string) (name, value string) {
	if l.Getenv == nil {
		return "", ""
	}
	if v := l.Getenv(Env(key)); v != "" {
		return Env(key), v
	}
	if alias := Aliases[key]; alias != "" && l.Getenv(alias) != "" {
		return alias, l.Getenv(alias)
	}
	return "", ""
}

func (l Layers) file(key string) any {
	if l.File == nil || !l.File.Found {
		return nil
	}
	return l.File.doc.value(key)
}
