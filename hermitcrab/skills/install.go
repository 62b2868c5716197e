package skills

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Limits on a folder Add installs: a skill is instructions and a few
// resources, never an archive of a project.
const (
	MaxInstallBytes   = 16 << 20 // the files' total size
	MaxInstallEntries = 1000     // files and folders
)

// InvalidError is the error of Add or Remove for what the person must
// fix: a folder that is not a skill Add installs, a name that is taken or
// not a skill's. Reason says why; Taken and FolderName say what else
// the person may do, which a command names in its own terms.
type InvalidError struct {
	Reason     string
	Taken      string // the name of the installed skill Add would replace: it may be replaced or removed
	FolderName bool   // the refused name was the folder's: another may be given
}

func (e *InvalidError) Error() string {
	switch {
	case e.Taken != "":
		return e.Reason + ": replace it, or remove it first"
	case e.FolderName:
		return e.Reason + " (give the skill another name than its folder's)"
	}
	return e.Reason
}

func invalid(format string, args ...any) error {
	return &InvalidError{Reason: fmt.Sprintf(format, args...)}
}

func taken(name string) error {
	return &InvalidError{Reason: fmt.Sprintf("a skill named %q is installed already", name), Taken: name}
}

// Add installs the skill in the folder src as the skill name (the folder's
// own name when name is ""): it copies the folder into a new folder beside
// the skills directory, checks the copy as List does (the same rules, the
// same messages), and only then renames it into place, so a skill is
// never seen half copied. An installed skill of that name is replaced only
// with replace. The copy holds regular files and folders only: a symbolic
// link is copied as the file it points to when that file is inside src,
// and refused otherwise, as is a link to a folder, a special file (a
// device, a pipe, a socket), more than MaxInstallEntries entries or
// MaxInstallBytes bytes. What the person must fix is an *InvalidError.
func (d Dir) Add(src, name string, replace bool) (Skill, error) {
	info, err := os.Stat(src)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Skill{}, invalid("%s does not exist: give the folder that holds the skill's %s", src, SkillFile)
	case err != nil:
		return Skill{}, fmt.Errorf("add skill: %w", err)
	case !info.IsDir():
		return Skill{}, invalid("%s is not a folder: give the folder that holds the skill's %s", src, SkillFile)
	}
	if name == "" {
		abs, err := filepath.Abs(src)
		if err != nil {
			return Skill{}, fmt.Errorf("add skill: %w", err)
		}
		name = filepath.Base(abs)
	}
	if err := CheckName(name); err != nil {
		return Skill{}, &InvalidError{Reason: err.Error(), FolderName: true}
	}
	dest := filepath.Join(d.Path, name)
	if _, err := os.Lstat(dest); err == nil && !replace {
		return Skill{}, taken(name)
	}
	if err := os.MkdirAll(d.Path, 0o700); err != nil {
		return Skill{}, fmt.Errorf("add skill %q: %w", name, err)
	}
	// The copy is made beside the skills directory, on its file system
	// (a rename is atomic there), where List does not see it.
	tmp, err := os.MkdirTemp(filepath.Dir(d.Path), ".skill-add-")
	if err != nil {
		return Skill{}, fmt.Errorf("add skill %q: %w", name, err)
	}
	defer func() { _ = os.RemoveAll(tmp) }() // what is left of the copy once renamed, or of a failed one
	if err := copyTree(src, filepath.Join(tmp, name)); err != nil {
		return Skill{}, err
	}
	s, err := Dir{Path: tmp}.read(name)
	if err != nil {
		return Skill{}, &InvalidError{Reason: err.Error()}
	}
	if replace {
		// The old skill steps aside into tmp, removed with it; a failed
		// rename of the new one puts it back.
		old := filepath.Join(tmp, ".old")
		if err := os.Rename(dest, old); err == nil {
			if err := os.Rename(filepath.Join(tmp, name), dest); err != nil {
				return Skill{}, errors.Join(fmt.Errorf("add skill %q: %w", name, err), os.Rename(old, dest))
			}
			return s, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return Skill{}, fmt.Errorf("add skill %q: %w", name, err)
		}
	}
	if err := os.Rename(filepath.Join(tmp, name), dest); err != nil {
		if _, serr := os.Lstat(dest); serr == nil { // installed meanwhile by someone else
			return Skill{}, taken(name)
		}
		return Skill{}, fmt.Errorf("add skill %q: %w", name, err)
	}
	return s, nil
}

// copyTree copies the folder src to dest (which must not exist) through
// an os.Root of src: no path or symbolic link leads out of it.
func copyTree(src, dest string) error {
	root, err := os.OpenRoot(src)
	if err != nil {
		return fmt.Errorf("add skill: %w", err)
	}
	defer func() { _ = root.Close() }() // read only
	var entries int
	var total int64
	return fs.WalkDir(root.FS(), ".", func(rel string, e fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("add skill: reading %s: %w", filepath.Join(src, rel), err)
		}
		if entries++; entries > MaxInstallEntries {
			return invalid("%s has more than %d files and folders: a skill holds its instructions and a few resources", src, MaxInstallEntries)
		}
		to := filepath.Join(dest, filepath.FromSlash(rel))
		shown := filepath.Join(src, filepath.FromSlash(rel))
		mode := e.Type()
		if mode&fs.ModeSymlink != 0 {
			// The link's target, through the root: a link out of src fails.
			info, err := root.Stat(filepath.FromSlash(rel))
			if err != nil {
				return invalid("%s is a symbolic link that leads out of the folder (or nowhere): copy what it points to into the folder", shown)
			}
			mode = info.Mode().Type()
			if mode.IsDir() {
				return invalid("%s is a symbolic link to a folder: put the folder itself there", shown)
			}
		}
		switch {
		case mode.IsDir():
			return os.Mkdir(to, 0o700)
		case !mode.IsRegular():
			return invalid("%s is not a regular file (%s): a skill holds files and folders only", shown, mode)
		}
		n, err := copyFile(root, filepath.FromSlash(rel), to, MaxInstallBytes-total)
		total += n
		if errors.Is(err, errTooLarge) {
			return invalid("%s holds more than %d bytes: a skill holds its instructions and a few resources", src, MaxInstallBytes)
		}
		return err
	})
}

// copyFile copies file rel of root to the new file to, refusing more than
// limit bytes (the file may grow while it is read), and returns how many
// it copied.
func copyFile(root *os.Root, rel, to string, limit int64) (int64, error) {
	in, err := root.Open(rel)
	if err != nil {
		return 0, fmt.Errorf("add skill: %w", err)
	}
	defer func() { _ = in.Close() }() // read only
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, fmt.Errorf("add skill: %w", err)
	}
	n, err := io.Copy(out, io.LimitReader(in, limit+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return n, fmt.Errorf("add skill: copying %s: %w", rel, err)
	case n > limit:
		return n, errTooLarge
	}
	return n, nil
}

// Remove uninstalls the skill name: its folder leaves the skills
// directory at once (renamed aside), then is deleted. A name that is not
// a skill's, or of no installed skill, is an *InvalidError.
func (d Dir) Remove(name string) error {
	if err := CheckName(name); err != nil {
		return &InvalidError{Reason: err.Error()}
	}
	dest := filepath.Join(d.Path, name)
	if _, err := os.Lstat(dest); errors.Is(err, fs.ErrNotExist) {
		return invalid("no skill is named %q: `skills list` lists them", name)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(d.Path), ".skill-remove-")
	if err != nil {
		return fmt.Errorf("remove skill %q: %w", name, err)
	}
	if err := os.Rename(dest, filepath.Join(tmp, name)); err != nil {
		return errors.Join(fmt.Errorf("remove skill %q: %w", name, err), os.Remove(tmp))
	}
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("remove skill %q: it is no longer installed, but its files are left in %s: %w", name, tmp, err)
	}
	return nil
}
