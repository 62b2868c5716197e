package workspace

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/llmkernels/kernels/internal/atomicfile"
)

// Attempt isolation. Each attempt works in its own copy of the workspace
// (Copy), built from the workspace as it stands plus the attempt's own
// files; what an attempt changed is read back as files (Diff); only a
// verified leaf's files enter the workspace (Merge), and only when every
// file it changes is still as the attempt found it (else a *ConflictError:
// never a silent overwrite).

// KernelDir is the kernel's own directory inside a workspace (built
// tools, the merge lock); copies and diffs leave it out.
const KernelDir = ".solve"

// Usable checks that dir exists, is a directory and can be written (a
// file created and removed), so a run refuses a missing or read-only
// workspace before it spends anything.
func Usable(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("workspace %s does not exist; create it (mkdir -p %s) or give an existing directory", dir, dir)
	}
	if err != nil {
		return fmt.Errorf("workspace %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("workspace %s is not a directory", dir)
	}
	f, err := os.CreateTemp(dir, ".solve-write-check-*")
	if err != nil {
		return fmt.Errorf("workspace %s cannot be written (%w); give a directory the kernel may write", dir, err)
	}
	name := f.Name()
	return errors.Join(f.Close(), os.Remove(name))
}

// Manifest maps each file of a workspace (a slash-separated path relative
// to it) to the sha256 of its content.
type Manifest map[string]string

// Encoding of a File's content.
const Base64 = "base64"

// bytes is a file's content as bytes.
func (f File) bytes() ([]byte, error) {
	if f.Encoding == Base64 {
		b, err := base64.StdEncoding.DecodeString(f.Content)
		if err != nil {
			return nil, fmt.Errorf("file %s: content is not base64: %w", f.Path, err)
		}
		return b, nil
	}
	return []byte(f.Content), nil
}

// Hash is the sha256 of the file's content ("" for a deletion).
func (f File) Hash() (string, error) {
	if f.Deleted {
		return "", nil
	}
	b, err := f.bytes()
	if err != nil {
		return "", err
	}
	return hashOf(b), nil
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Hash is the sha256 of dir/path's content, "" when there is no such file.
func Hash(dir, path string) (string, error) {
	p, err := inside(dir, path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return "", fmt.Errorf("file path %q is a directory in %s; give a file's path", path, dir)
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return hashOf(b), nil
}

// inside is path under dir, refusing one that leaves it: by its words, or
// through a symbolic link on the way (a directory linked out of the
// workspace, or, in an attempt's copy, to the workspace itself). The last
// element may be a link: a file written there replaces the link.
func inside(dir, path string) (string, error) {
	p := filepath.Join(dir, filepath.Clean("/"+path))
	if path == "" || !strings.HasPrefix(p, filepath.Clean(dir)+string(filepath.Separator)) {
		return "", fmt.Errorf("file path %q leaves the workspace %s; give a relative path inside it", path, dir)
	}
	root, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil // nothing there yet, so no link to follow
	}
	if err != nil {
		return "", fmt.Errorf("file path %q: %w", path, err)
	}
	parent := filepath.Dir(p) // its deepest existing directory
	for len(parent) > len(filepath.Clean(dir)) {
		if _, err := os.Lstat(parent); err == nil {
			break
		}
		parent = filepath.Dir(parent)
	}
	real, err := filepath.EvalSymlinks(parent)
	if err != nil {
		return "", fmt.Errorf("file path %q: %w", path, err)
	}
	if real != root && !strings.HasPrefix(real, root+string(filepath.Separator)) {
		return "", fmt.Errorf("file path %q goes through a symbolic link out of the workspace %s (to %s); give a path inside it", path, dir, real)
	}
	return p, nil
}

// Copy copies src's files, directories and symbolic links (modes kept,
// KernelDir left out) into dst, which must not exist or be empty, and
// returns src's manifest as copied.
func Copy(src, dst string) (Manifest, error) {
	m := Manifest{}
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if rel == "." {
			return os.MkdirAll(dst, 0o755)
		}
		if d.IsDir() && rel == KernelDir {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case info.Mode().IsRegular():
			h, err := copyFile(path, target, info.Mode().Perm())
			m[filepath.ToSlash(rel)] = h
			return err
		}
		return nil // sockets, devices and pipes are not workspace files
	})
	if err != nil {
		return nil, fmt.Errorf("copy the workspace %s to %s: %w", src, dst, err)
	}
	return m, nil
}

func copyFile(src, dst string, perm fs.FileMode) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer func() { _ = in.Close() }() // read only: what was read is the copy
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(out, h), in); err != nil {
		return "", errors.Join(err, out.Close())
	}
	return hex.EncodeToString(h.Sum(nil)), out.Close()
}

// Diff lists what changed in dir since base (the manifest it was copied
// with): new and changed regular files with their whole content (base64
// when not UTF-8 text), and deleted ones, sorted by path. KernelDir is
// left out.
func Diff(dir string, base Manifest) ([]File, error) {
	var out []File
	seen := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel == KernelDir {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel = filepath.ToSlash(rel)
		seen[rel] = true
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if h := hashOf(b); base[rel] != h {
			f := File{Path: rel, Content: string(b)}
			if !utf8.Valid(b) {
				f.Content, f.Encoding = base64.StdEncoding.EncodeToString(b), Base64
			}
			out = append(out, f)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read what changed in %s: %w", dir, err)
	}
	for p := range base {
		if !seen[p] {
			out = append(out, File{Path: p, Deleted: true})
		}
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// ConflictError is a merge refused because files changed in the
// workspace since the attempt was made (another node's merge, or a
// person's edit).
type ConflictError struct{ Paths []string }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("merge conflict: %s changed in the workspace since this attempt was made; the attempt's version was not written", strings.Join(e.Paths, ", "))
}

// Conflicts lists the files whose content in dir is neither what the
// attempt found (base) nor what it writes.
func Conflicts(dir string, files []File, base map[string]string) ([]string, error) {
	var bad []string
	for _, f := range files {
		cur, err := Hash(dir, f.Path)
		if err != nil {
			return nil, err
		}
		want, err := f.Hash()
		if err != nil {
			return nil, err
		}
		if cur != base[f.Path] && cur != want {
			bad = append(bad, f.Path)
		}
	}
	return bad, nil
}

// Merge writes a verified attempt's files into the workspace dir under
// the workspace's merge lock (one merge at a time, across processes),
// after checking that none changed since the attempt was made: a
// *ConflictError otherwise, and nothing is written.
func Merge(dir string, files []File, base map[string]string) error {
	if err := os.MkdirAll(filepath.Join(dir, KernelDir), 0o755); err != nil {
		return fmt.Errorf("merge into %s: %w", dir, err)
	}
	unlock, err := atomicfile.Lock(filepath.Join(dir, KernelDir, "merge.lock"))
	if err != nil {
		return fmt.Errorf("merge into %s: %w", dir, err)
	}
	defer unlock()
	bad, err := Conflicts(dir, files, base)
	if err != nil {
		return fmt.Errorf("merge into %s: %w", dir, err)
	}
	if len(bad) > 0 {
		return &ConflictError{Paths: bad}
	}
	return Write(dir, files)
}
