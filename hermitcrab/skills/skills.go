// Package skills keeps an instance's skills (the Agent Skills of the v3
// plan): folders in the data directory's skills directory, each holding a
// SKILL.md (a front matter with the skill's name and when to use it, then
// its instructions) and any resources beside it. Progressive disclosure:
// every prompt carries one short line a skill (Index), the LLM loads the
// instructions when it needs them (Load), and a resource only when the
// instructions send it there (Load with a file).
//
// A skill is text. Loading one changes nothing of the tools: a skill that
// names tools (allowed-tools in its front matter, say) grants none; the
// person's choices and set_tools decide them.
package skills

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/llmkernels/kernels/internal/atomicfile"
	"github.com/llmkernels/kernels/internal/termtext"
)

// Dir is a skills directory: DIR/NAME/SKILL.md, and resources beside it.
type Dir struct {
	Path string
}

// Skill is what the index says of a skill.
type Skill struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Files       []string `json:"files"` // its resources: files beside SKILL.md, slash-separated
}

// SkillFile is the file of a skill's front matter and instructions.
const SkillFile = "SKILL.md"

// MaxIndexLine is the most bytes a skill's line in the prompt's index may
// take: 40 tokens at the 4 characters a token the prompt's budgets use
// (and a byte is never less than a character). A longer description is
// cut to fit.
const MaxIndexLine = 160

// Limits on what a skill may hold.
const (
	MaxDescription  = 1024     // characters, as Agent Skills allows
	MaxInstructions = 64 << 10 // bytes of SKILL.md
	maxFiles        = 50       // resources listed
)

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// CheckName refuses a name that is not a skill's: lowercase letters,
// digits and hyphens, at most 64, starting with a letter or a digit (the
// Agent Skills rule; it also keeps the name one path element).
func CheckName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("skill name %q: use lowercase letters, digits and -, at most 64, starting with a letter or a digit", name)
	}
	return nil
}

// List reads every skill, in name order. A folder whose SKILL.md is
// missing or malformed is left out with a problem naming it; a missing
// directory is no skills.
func (d Dir) List() (skills []Skill, problems []string, err error) {
	entries, err := os.ReadDir(d.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read skills: %w", err)
	}
	for _, e := range entries {
		if !d.isFolder(e) {
			continue
		}
		s, err := d.read(e.Name())
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		skills = append(skills, s)
	}
	return skills, problems, nil
}

// isFolder tells whether e is a folder, or a symbolic link to one (a
// skill kept elsewhere and linked in): both are read as skills, their
// files confined to the folder (os.Root).
func (d Dir) isFolder(e fs.DirEntry) bool {
	if e.Type()&fs.ModeSymlink == 0 {
		return e.IsDir()
	}
	info, err := os.Stat(filepath.Join(d.Path, e.Name()))
	return err == nil && info.IsDir()
}

func (d Dir) read(name string) (Skill, error) {
	if err := CheckName(name); err != nil {
		return Skill{}, fmt.Errorf("skills/%s: %v", name, err)
	}
	front, _, err := d.file(name)
	if err != nil {
		return Skill{}, err
	}
	s := Skill{Name: name, Description: front["description"]}
	switch {
	case s.Description == "":
		return Skill{}, fmt.Errorf("skills/%s/%s: no description in its front matter (---, description: when to use it, ---)", name, SkillFile)
	case front["name"] != "" && front["name"] != name:
		return Skill{}, fmt.Errorf("skills/%s/%s: its front matter names it %q; a skill is named by its folder", name, SkillFile, front["name"])
	}
	root, err := os.OpenRoot(filepath.Join(d.Path, name))
	if err != nil {
		return Skill{}, fmt.Errorf("skill %q: %w", name, err)
	}
	defer func() { _ = root.Close() }() // opened only to read: nothing to report
	// Walked inside the root: the folder may itself be a link, and no
	// link in it leads out.
	_ = fs.WalkDir(root.FS(), ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || len(s.Files) >= maxFiles {
			return fs.SkipDir
		}
		if e.Type().IsRegular() && path != SkillFile {
			s.Files = append(s.Files, path)
		}
		return nil
	})
	return s, nil
}

// file reads a skill's SKILL.md: its front matter's keys and its
// instructions.
func (d Dir) file(name string) (map[string]string, string, error) {
	data, err := d.readIn(name, SkillFile)
	if err != nil {
		return nil, "", err
	}
	front, body, err := parse(string(data))
	if err != nil {
		return nil, "", fmt.Errorf("skills/%s/%s: %v", name, SkillFile, err)
	}
	return front, body, nil
}

// readIn reads file of skill name, confined to the skill's folder: no
// path, symbolic link or ".." leads out of it (os.Root).
func (d Dir) readIn(name, file string) ([]byte, error) {
	root, err := os.OpenRoot(filepath.Join(d.Path, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no skill is named %q", name)
	}
	if err != nil {
		return nil, fmt.Errorf("skill %q: %w", name, err)
	}
	data, err := readLimited(root, filepath.FromSlash(file))
	if cerr := root.Close(); err == nil && cerr != nil {
		err = cerr
	}
	switch {
	case errors.Is(err, errTooLarge):
		return nil, fmt.Errorf("skill %q: %s is over %d bytes", name, file, MaxInstructions)
	case err != nil:
		return nil, fmt.Errorf("skill %q has no file %q inside its folder", name, file)
	}
	return data, nil
}

var errTooLarge = errors.New("too large")

// readLimited reads a file of root of at most MaxInstructions bytes.
func readLimited(root *os.Root, file string) ([]byte, error) {
	info, err := root.Stat(file)
	switch {
	case err != nil:
		return nil, err
	case !info.Mode().IsRegular():
		return nil, fs.ErrInvalid
	case info.Size() > MaxInstructions:
		return nil, errTooLarge
	}
	return root.ReadFile(file)
}

// parse splits SKILL.md into its front matter (the lines between the
// first two "---", read as "key: value", a value on one line or folded
// from the indented lines under "key: >" or "key: |") and its body.
func parse(text string) (map[string]string, string, error) {
	text = strings.TrimPrefix(strings.ReplaceAll(text, "\r\n", "\n"), "\ufeff")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return nil, "", errors.New(`it must start with a front matter: "---", then "name: …" and "description: …", then "---"`)
	}
	head, body, ok := strings.Cut(rest, "\n---")
	if !ok {
		return nil, "", errors.New(`its front matter has no closing "---"`)
	}
	body = strings.TrimPrefix(strings.TrimLeft(body, "-"), "\n")
	front := map[string]string{}
	lines := strings.Split(head, "\n")
	for i := 0; i < len(lines); i++ {
		key, value, ok := strings.Cut(lines[i], ":")
		if !ok || strings.HasPrefix(lines[i], " ") || strings.HasPrefix(lines[i], "\t") {
			continue // a nested line of a key not read here
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if value == ">" || value == "|" || value == ">-" || value == "|-" {
			var parts []string
			for i+1 < len(lines) && (strings.HasPrefix(lines[i+1], " ") || strings.HasPrefix(lines[i+1], "\t")) {
				i++
				parts = append(parts, strings.TrimSpace(lines[i]))
			}
			value = strings.Join(parts, " ")
		}
		front[key] = strings.Trim(value, `"'`)
	}
	return front, body, nil
}

// Load is what skill_load answers: the instructions of skill name (its
// SKILL.md after the front matter) and the list of its resources, or,
// with file, that resource.
func (d Dir) Load(name, file string) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	// Only a skill List shows is read: a folder it leaves out (no
	// SKILL.md, another name) is no skill, and its files stay unread.
	s, err := d.read(name)
	if err != nil {
		return "", err
	}
	if file != "" {
		data, err := d.readIn(name, file)
		if err != nil {
			return "", err
		}
		return string(data), nil
	}
	_, body, err := d.file(name)
	if err != nil {
		return "", err
	}
	if len(s.Files) > 0 {
		body += fmt.Sprintf("\n\n[resources of this skill, each read with skill_load(%q, file): %s]", name, strings.Join(s.Files, ", "))
	}
	return body, nil
}

// Write saves a skill (the LLM's own, with skill_write): SKILL.md made
// from its name, description and instructions, replaced atomically. Its
// resources, if any, stay.
func (d Dir) Write(name, description, instructions string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	description = strings.Join(strings.Fields(description), " ")
	switch {
	case description == "":
		return errors.New("a skill needs a description: one sentence saying when to use it")
	case utf8.RuneCountInString(description) > MaxDescription:
		return fmt.Errorf("the description has %d characters; at most %d (it is cut to about %d bytes in the prompt anyway)", utf8.RuneCountInString(description), MaxDescription, MaxIndexLine)
	case strings.TrimSpace(instructions) == "":
		return errors.New("a skill needs instructions: what to do, step by step")
	}
	text := fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n\n%s\n", name, description, strings.TrimSpace(instructions))
	if len(text) > MaxInstructions {
		return fmt.Errorf("the skill is %d bytes; at most %d: put the detail in the blocks", len(text), MaxInstructions)
	}
	if err := os.MkdirAll(filepath.Join(d.Path, name), 0o700); err != nil {
		return fmt.Errorf("write skill %q: %w", name, err)
	}
	return atomicfile.Write(filepath.Join(d.Path, name, SkillFile), []byte(text), 0o600)
}

// IndexHeader opens the prompt's index of skills.
const IndexHeader = "[skills] Instructions you load with skill_load(name) when a task calls for one (skill_write saves your own; set_tools adds it):"

// Index is the prompt's index of skills: the header, then one line a
// skill, each at most MaxIndexLine bytes. "" without skills.
func Index(skills []Skill) string {
	if len(skills) == 0 {
		return ""
	}
	lines := []string{IndexHeader}
	for _, s := range skills {
		lines = append(lines, IndexLine(s))
	}
	return strings.Join(lines, "\n")
}

// IndexLine is a skill's line in the index: "\n- NAME: DESCRIPTION", the
// description cut (at a character) so the line with its line break takes
// at most MaxIndexLine bytes.
func IndexLine(s Skill) string {
	// A skill may come from anywhere: its text reaches the prompt inert.
	line := termtext.Line("- " + s.Name + ": " + strings.Join(strings.Fields(s.Description), " "))
	if len(line)+1 <= MaxIndexLine {
		return line
	}
	const more = "…"
	cut := MaxIndexLine - 1 - len(more)
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return line[:cut] + more
}
