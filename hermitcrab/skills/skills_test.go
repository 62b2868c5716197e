package skills

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeSkill(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, name), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name, SkillFile), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestIndexLineCostsAtMost40TokensWhateverTheDescription pins the index's
// cost per skill: its line, with its line break, takes at most
// MaxIndexLine bytes (40 tokens at 4 characters a token), however long
// the description and whatever its characters; a short one is whole.
func TestIndexLineCostsAtMost40TokensWhateverTheDescription(t *testing.T) {
	for _, desc := range []string{
		"Use when the person asks for a chart.",
		strings.Repeat("Use it when the task needs careful, step by step block navigation. ", 30),
		strings.Repeat("ü€𝄞", 200),
		"line\nbreaks\x1b[2J and an escape " + strings.Repeat("x", 300),
	} {
		line := IndexLine(Skill{Name: strings.Repeat("n", 64), Description: desc})
		if len(line)+1 > MaxIndexLine {
			t.Errorf("a line of %d bytes (with its line break), over %d: %q", len(line)+1, MaxIndexLine, line)
		}
		if strings.ContainsAny(line, "\n\x1b") {
			t.Errorf("the line is not inert: %q", line)
		}
	}
	short := IndexLine(Skill{Name: "charts", Description: "Use when the person asks for a chart."})
	if short != "- charts: Use when the person asks for a chart." {
		t.Errorf("a short line: %q", short)
	}
	if MaxIndexLine > 40*4 {
		t.Errorf("MaxIndexLine %d is over 40 tokens", MaxIndexLine)
	}
}

// TestListReadsFrontMatterAndLeavesOutWhatIsMalformed pins List: name and
// description from the front matter (folded or quoted too), resources
// listed; a folder without SKILL.md, without a description, with another
// name or an unusable name is a problem, and the rest still load.
func TestListReadsFrontMatterAndLeavesOutWhatIsMalformed(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "charts", "---\nname: charts\ndescription: \"Draw charts in the shell.\"\nallowed-tools: web_request\n---\n\n# Charts\nUse recharts.\n")
	writeSkill(t, dir, "folded", "---\nname: folded\ndescription: >\n  Two lines\n  folded.\n---\nbody\n")
	if err := os.WriteFile(filepath.Join(dir, "charts", "example.jsx"), []byte("<Chart/>"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeSkill(t, dir, "nodesc", "---\nname: nodesc\n---\nbody\n")
	writeSkill(t, dir, "other", "---\nname: else\ndescription: d\n---\n")
	writeSkill(t, dir, "Bad_Name", "---\ndescription: d\n---\n")
	writeSkill(t, dir, "nofront", "just text\n")
	if err := os.MkdirAll(filepath.Join(dir, "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	list, problems, err := Dir{Path: dir}.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "charts" || list[0].Description != "Draw charts in the shell." || strings.Join(list[0].Files, ",") != "example.jsx" ||
		list[1].Description != "Two lines folded." {
		t.Errorf("skills: %+v", list)
	}
	if len(problems) != 5 {
		t.Errorf("problems: %q", problems)
	}
	if list, problems, err := (Dir{Path: filepath.Join(dir, "none")}).List(); list != nil || problems != nil || err != nil {
		t.Errorf("a missing directory: %v %v %v", list, problems, err)
	}
}

// TestLoadStaysInsideTheSkillsFolder pins the confinement of resources:
// no "..", absolute path or symbolic link reads outside the skill.
func TestLoadStaysInsideTheSkillsFolder(t *testing.T) {
	dir := t.TempDir()
	d := Dir{Path: filepath.Join(dir, "skills")}
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("api key"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeSkill(t, d.Path, "charts", "---\ndescription: Draw charts.\n---\nSee example.jsx.\n")
	if err := os.WriteFile(filepath.Join(d.Path, "charts", "example.jsx"), []byte("<Chart/>"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "secret"), filepath.Join(d.Path, "charts", "link")); err != nil {
		t.Fatal(err)
	}
	body, err := d.Load("charts", "")
	if err != nil || !strings.HasPrefix(body, "See example.jsx.") || !strings.Contains(body, "file): example.jsx]") {
		t.Errorf("Load: %q %v", body, err)
	}
	if got, err := d.Load("charts", "example.jsx"); err != nil || got != "<Chart/>" {
		t.Errorf("a resource: %q %v", got, err)
	}
	for _, file := range []string{"../../secret", filepath.Join(dir, "secret"), "link"} {
		if got, err := d.Load("charts", file); err == nil || strings.Contains(got, "api key") {
			t.Errorf("%s read outside the skill: %q", file, got)
		}
	}
	if err := os.WriteFile(filepath.Join(d.Path, "charts", "huge.txt"), make([]byte, MaxInstructions+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Load("charts", "huge.txt"); err == nil || !strings.Contains(err.Error(), "is over") {
		t.Errorf("a resource over the limit: %v", err)
	}
	if _, err := d.Load("../skills/charts", ""); err == nil {
		t.Error("a name that is a path was taken")
	}
}

// TestWriteMakesASkillListAndLoadRead pins skill_write's side.
func TestWriteMakesASkillListAndLoadRead(t *testing.T) {
	d := Dir{Path: filepath.Join(t.TempDir(), "skills")}
	if err := d.Write("compress-history", "When history 0 is full:\nsummarise it.", "1. block_read history\n2. compress"); err != nil {
		t.Fatal(err)
	}
	list, problems, err := d.List()
	if err != nil || len(problems) > 0 || len(list) != 1 || list[0].Description != "When history 0 is full: summarise it." {
		t.Fatalf("after Write: %+v %q %v", list, problems, err)
	}
	if body, err := d.Load("compress-history", ""); err != nil || body != "\n1. block_read history\n2. compress\n" {
		t.Errorf("Load: %q %v", body, err)
	}
	for _, c := range []struct{ name, desc, instr, want string }{
		{"Bad Name", "d", "i", "lowercase"},
		{"ok", "", "i", "description"},
		{"ok", "d", " ", "instructions"},
		{"ok", strings.Repeat("d", MaxDescription+1), "i", "at most"},
	} {
		if err := d.Write(c.name, c.desc, c.instr); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Write(%q, %d chars, %q): %v", c.name, len(c.desc), c.instr, err)
		}
	}
}

// A folder List leaves out is no skill: skill_load reads neither its
// instructions nor its files (a folder of secrets linked in by mistake,
// with no SKILL.md, stays unread). A folder linked into skills/ is listed
// or left out like any other, never skipped without a word, and its
// resources stay inside the folder linked.
func TestLoadReadsOnlyTheSkillsListShows(t *testing.T) {
	dir := t.TempDir()
	d := Dir{Path: filepath.Join(dir, "skills")}
	outside := filepath.Join(dir, "outside")
	if err := os.MkdirAll(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "passwd"), []byte("root:x:0:0"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeSkill(t, d.Path, "mism", "---\nname: other\ndescription: d\n---\nbody\n")
	if err := os.WriteFile(filepath.Join(d.Path, "mism", "notes.txt"), []byte("left out"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(d.Path, "etc")); err != nil {
		t.Fatal(err)
	}
	writeSkill(t, dir, "linked", "---\ndescription: A skill kept elsewhere.\n---\nSee ex.txt.\n")
	if err := os.WriteFile(filepath.Join(dir, "linked", "ex.txt"), []byte("example"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "linked"), filepath.Join(d.Path, "charts")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, file string }{{"etc", "passwd"}, {"etc", ""}, {"mism", "notes.txt"}, {"mism", ""}} {
		if got, err := d.Load(c.name, c.file); err == nil {
			t.Errorf("skill_load(%s, %q) of a folder List leaves out: %q", c.name, c.file, got)
		}
	}
	skills, problems, err := d.List()
	if err != nil || len(skills) != 1 || skills[0].Name != "charts" {
		t.Fatalf("List: %+v %v", skills, err)
	}
	if !strings.Contains(strings.Join(problems, "\n"), `"etc"`) {
		t.Errorf("the linked folder without SKILL.md is skipped without a word: %q", problems)
	}
	if got, err := d.Load("charts", "ex.txt"); err != nil || got != "example" {
		t.Errorf("a linked skill's resource: %q %v", got, err)
	}
}
