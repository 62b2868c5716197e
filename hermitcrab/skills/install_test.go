package skills

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// folder makes a folder of files (path: content) under a new temporary
// directory and returns its path.
func folder(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	for path, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// installed is what a data directory's skills directory holds: the
// names of its entries, and nothing else beside it.
func installed(t *testing.T, d Dir) []string {
	t.Helper()
	var names []string
	entries, _ := os.ReadDir(d.Path)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	around, _ := os.ReadDir(filepath.Dir(d.Path))
	for _, e := range around {
		if e.Name() != filepath.Base(d.Path) {
			t.Errorf("left beside the skills directory: %s", e.Name())
		}
	}
	return names
}

const charts = "---\nname: charts\ndescription: Draw charts.\n---\nUse recharts.\n"

// TestAddCopiesASkillAndListSeesIt pins Add: the folder's files and
// subfolders are copied, a link to a file inside is copied as that file,
// the skill is what List then lists, and --name installs it under
// another name.
func TestAddCopiesASkillAndListSeesIt(t *testing.T) {
	src := folder(t, "charts", map[string]string{"SKILL.md": charts, "examples/bar.jsx": "<Bar/>"})
	if err := os.Symlink("examples/bar.jsx", filepath.Join(src, "bar-link.jsx")); err != nil {
		t.Fatal(err)
	}
	d := Dir{Path: filepath.Join(t.TempDir(), "skills")}
	s, err := d.Add(src, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "charts" || s.Description != "Draw charts." || strings.Join(s.Files, ",") != "bar-link.jsx,examples/bar.jsx" {
		t.Errorf("added %+v", s)
	}
	info, err := os.Lstat(filepath.Join(d.Path, "charts", "bar-link.jsx"))
	if err != nil || !info.Mode().IsRegular() {
		t.Errorf("the link was not copied as a file: %v %v", info, err)
	}
	if got, err := d.Load("charts", "bar-link.jsx"); err != nil || got != "<Bar/>" {
		t.Errorf("the linked resource: %q %v", got, err)
	}
	list, problems, _ := d.List()
	if len(list) != 1 || list[0].Name != "charts" || len(problems) != 0 {
		t.Errorf("List after Add: %+v %v", list, problems)
	}
	// --name: the folder's name does not matter, the front matter's does.
	other := folder(t, "whatever", map[string]string{"SKILL.md": "---\ndescription: Plot.\n---\nbody\n"})
	if s, err := d.Add(other, "plots", false); err != nil || s.Name != "plots" {
		t.Errorf("--name: %+v %v", s, err)
	}
	if names := installed(t, d); strings.Join(names, ",") != "charts,plots" {
		t.Errorf("installed: %v", names)
	}
}

// TestAddRefusesToReplaceUnlessAsked pins that an installed skill stays
// unless replace is given, and that a replaced skill keeps nothing of the
// old one.
func TestAddRefusesToReplaceUnlessAsked(t *testing.T) {
	d := Dir{Path: filepath.Join(t.TempDir(), "skills")}
	if _, err := d.Add(folder(t, "charts", map[string]string{"SKILL.md": charts, "old.txt": "old"}), "", false); err != nil {
		t.Fatal(err)
	}
	newer := folder(t, "charts", map[string]string{"SKILL.md": strings.Replace(charts, "Draw charts.", "Draw better charts.", 1)})
	_, err := d.Add(newer, "", false)
	if _, ok := errors.AsType[*InvalidError](err); !ok || !strings.Contains(err.Error(), "installed already: replace it, or remove it first") {
		t.Fatalf("a second add: %v", err)
	}
	if list, _, _ := d.List(); list[0].Description != "Draw charts." {
		t.Errorf("a refused add changed the skill: %+v", list[0])
	}
	if _, err := d.Add(newer, "", true); err != nil {
		t.Fatal(err)
	}
	list, _, _ := d.List()
	if list[0].Description != "Draw better charts." || len(list[0].Files) != 0 {
		t.Errorf("after --replace: %+v", list[0])
	}
	installed(t, d)
}

// TestAddValidatesAsListDoes pins that Add refuses what List would leave
// out, with List's own message, and installs nothing.
func TestAddValidatesAsListDoes(t *testing.T) {
	for name, text := range map[string]string{
		"nofront": "no front matter\n",
		"nodesc":  "---\nname: nodesc\n---\nbody\n",
		"other":   "---\nname: else\ndescription: d\n---\n",
		"huge":    "---\ndescription: d\n---\n" + strings.Repeat("x", MaxInstructions),
	} {
		listed := Dir{Path: t.TempDir()}
		writeSkill(t, listed.Path, name, text)
		_, problems, _ := listed.List()
		d := Dir{Path: filepath.Join(t.TempDir(), "skills")}
		_, err := d.Add(folder(t, name, map[string]string{"SKILL.md": text}), "", false)
		if _, ok := errors.AsType[*InvalidError](err); !ok || len(problems) != 1 || err.Error() != problems[0] {
			t.Errorf("%s: add said %v; list says %q", name, err, problems)
		}
		if names := installed(t, d); len(names) != 0 {
			t.Errorf("%s: a refused skill was installed: %v", name, names)
		}
	}
	d := Dir{Path: filepath.Join(t.TempDir(), "skills")}
	for _, c := range []struct{ src, name, want string }{
		{folder(t, "Charts", map[string]string{"SKILL.md": charts}), "", `skill name "Charts": use lowercase`},
		{folder(t, "x", map[string]string{"SKILL.md": charts}), "../up", `skill name "../up"`},
		{folder(t, "empty", map[string]string{"notes.txt": "x"}), "", "no file \"SKILL.md\""},
		{filepath.Join(t.TempDir(), "missing"), "", "does not exist"},
		{filepath.Join(folder(t, "f", map[string]string{"SKILL.md": charts}), "SKILL.md"), "", "is not a folder"},
	} {
		_, err := d.Add(c.src, c.name, false)
		if _, ok := errors.AsType[*InvalidError](err); !ok || !strings.Contains(err.Error(), c.want) {
			t.Errorf("add %s as %q: %v, want %q", c.src, c.name, err, c.want)
		}
	}
	if names := installed(t, d); len(names) != 0 {
		t.Errorf("refused skills were installed: %v", names)
	}
}

// TestAddRefusesLinksOutSpecialFilesAndTooMuch pins the copy's rules: a
// symbolic link out of the folder (relative or absolute), to a folder, or
// to nothing; a named pipe; too many entries or bytes: each refused with
// the path, nothing installed, and the outside file never copied.
func TestAddRefusesLinksOutSpecialFilesAndTooMuch(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("the secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		make func(src string) error
		want string
	}{
		{"absolute link out", func(src string) error { return os.Symlink(secret, filepath.Join(src, "s.txt")) }, "leads out of the folder"},
		{"relative link out", func(src string) error {
			rel, _ := filepath.Rel(filepath.Join(src, "sub"), secret)
			return os.Symlink(rel, filepath.Join(src, "sub", "s.txt"))
		}, "leads out of the folder"},
		{"link nowhere", func(src string) error { return os.Symlink("gone.txt", filepath.Join(src, "s.txt")) }, "leads out of the folder (or nowhere)"},
		{"link to a folder", func(src string) error { return os.Symlink("sub", filepath.Join(src, "again")) }, "a symbolic link to a folder"},
		{"pipe", func(src string) error { return syscall.Mkfifo(filepath.Join(src, "pipe"), 0o600) }, "is not a regular file"},
		{"too many", func(src string) error {
			for i := range MaxInstallEntries {
				if err := os.WriteFile(filepath.Join(src, "sub", "f"+strconv.Itoa(i)), nil, 0o600); err != nil {
					return err
				}
			}
			return nil
		}, "more than 1000 files and folders"},
		{"too big", func(src string) error {
			f, err := os.Create(filepath.Join(src, "sub", "big.bin"))
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(MaxInstallBytes) // with SKILL.md, one byte over
		}, "more than 16777216 bytes"},
	} {
		src := folder(t, "charts", map[string]string{"SKILL.md": charts, "sub/ok.txt": "ok"})
		if err := c.make(src); err != nil {
			t.Fatal(err)
		}
		d := Dir{Path: filepath.Join(t.TempDir(), "skills")}
		_, err := d.Add(src, "", false)
		if _, ok := errors.AsType[*InvalidError](err); !ok || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if names := installed(t, d); len(names) != 0 {
			t.Errorf("%s: installed %v", c.name, names)
		}
	}
	// Just under the limits: installed.
	src := folder(t, "charts", map[string]string{"SKILL.md": charts})
	f, err := os.Create(filepath.Join(src, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxInstallBytes - int64(len(charts))); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := (Dir{Path: filepath.Join(t.TempDir(), "skills")}).Add(src, "", false); err != nil {
		t.Errorf("a skill of exactly %d bytes: %v", MaxInstallBytes, err)
	}
}

// TestRemoveUninstalls pins Remove: the folder goes, nothing is left
// beside the directory; a name of no skill, or not a skill's, is refused.
func TestRemoveUninstalls(t *testing.T) {
	d := Dir{Path: filepath.Join(t.TempDir(), "skills")}
	if _, err := d.Add(folder(t, "charts", map[string]string{"SKILL.md": charts, "a/b.txt": "b"}), "", false); err != nil {
		t.Fatal(err)
	}
	if err := d.Remove("charts"); err != nil {
		t.Fatal(err)
	}
	if names := installed(t, d); len(names) != 0 {
		t.Errorf("after remove: %v", names)
	}
	for name, want := range map[string]string{"charts": `no skill is named "charts"`, "..": `skill name ".."`} {
		err := d.Remove(name)
		if _, ok := errors.AsType[*InvalidError](err); !ok || !strings.Contains(err.Error(), want) {
			t.Errorf("remove %s: %v", name, err)
		}
	}
}
