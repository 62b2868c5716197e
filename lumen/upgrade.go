package lumen

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	_ "embed"

	"github.com/llmkernels/kernels/internal/atomicfile"
	"github.com/llmkernels/kernels/lumen/memory"
)

// promptHistory lists the SHA-256 of every default prompt template earlier
// versions of the kernel wrote into instances ("HASH  step/file.md").
//
//go:embed prompt-defaults.sha256
var promptHistory string

// upgrade brings an instance made by an earlier version of the kernel up
// to this one, writing a kernel memory for each thing it does.
func (in *Instance) upgrade(ctx context.Context) error {
	if err := in.pinLegacy(ctx); err != nil {
		return fmt.Errorf("open %s: pin old memory references: %w", in.Root, err)
	}
	if err := in.upgradePrompts(); err != nil {
		return fmt.Errorf("open %s: prompts: %w", in.Root, err)
	}
	return nil
}

// pinLegacy writes, for each day file holding lines written before
// memories carried ids, one migrate memory mapping their old references
// ("DAY@OFFSET", byte offsets) to the ids derived for them. From then on
// an edit of the file cannot change what an old reference names.
func (in *Instance) pinLegacy(ctx context.Context) error {
	days, err := in.mem.LegacyDays(ctx)
	if err != nil || len(days) == 0 {
		return err
	}
	var names []string
	for day := range days {
		names = append(names, day)
	}
	sort.Strings(names)
	for _, day := range names {
		aliases := days[day]
		if _, err := in.remember(memory.Kernel, "migrate", "maintenance",
			fmt.Sprintf("MIGRATE: %d memories of %s were written before memories carried ids; their old references (day@byte offset) are pinned to the ids derived for them, so an edit of the file can no longer change what they name", len(aliases), day),
			map[string]any{"day": day, "aliases": aliases}); err != nil {
			return err
		}
	}
	return nil
}

// upgradePrompts replaces each prompt template that is still an earlier
// default (the user never edited it) with the current default, and adds
// templates this version introduced. Edited templates are left alone; a
// variable the current default uses and the edited one lacks is warned
// about.
func (in *Instance) upgradePrompts() error {
	old := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(promptHistory))
	for sc.Scan() {
		if hash, name, ok := strings.Cut(sc.Text(), "  "); ok {
			old[name+" "+hash] = true
		}
	}
	return fs.WalkDir(defaults, "prompts", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		want, err := fs.ReadFile(defaults, p)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, "prompts/")
		dst := filepath.Join(in.Root, "prompts", filepath.FromSlash(rel))
		have, err := os.ReadFile(dst)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return in.replacePrompt(dst, rel, want, "added: new in this version of the kernel")
		case err != nil:
			return err
		case string(have) == string(want):
			return nil
		case old[rel+" "+sha256Hex(have)]:
			return in.replacePrompt(dst, rel, want, "replaced: it was an earlier default, never edited")
		}
		for _, v := range missingVars(string(want), string(have)) {
			in.opts.Logger.Warn("an edited prompt template lacks a variable the kernel's current default uses (delete the file to get the current default back)",
				"path", path.Join("prompts", rel), "variable", "{{"+v+"}}")
		}
		return nil
	})
}

func (in *Instance) replacePrompt(dst, rel string, content []byte, why string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := atomicfile.Write(dst, content, 0o644); err != nil {
		return err
	}
	_, err := in.remember(memory.Kernel, "migrate", "maintenance",
		fmt.Sprintf("MIGRATE: prompts/%s %s", rel, why), map[string]any{"file": "prompts/" + rel, "sha256": sha256Hex(content)})
	return err
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// missingVars are the variables want uses and have does not.
func missingVars(want, have string) []string {
	used := map[string]bool{}
	for _, m := range placeholderRE.FindAllStringSubmatch(have, -1) {
		used[m[1]] = true
	}
	var out []string
	for _, m := range placeholderRE.FindAllStringSubmatch(want, -1) {
		if !used[m[1]] {
			used[m[1]] = true
			out = append(out, m[1])
		}
	}
	return out
}
