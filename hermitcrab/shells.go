package hermitcrab

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/llmkernels/kernels/hermitcrab/store"
)

// ErrShellCompile is wrapped by Recompile's error when the JSX does not compile.
var ErrShellCompile = errors.New("the shell did not compile, so the previous one stays")

// Recompile checks and stores a new shell, and tells Options.OnShell. JSX
// that does not compile is an error wrapping ErrShellCompile that carries
// the compiler's message (line and column) for the LLM.
func (k *Kernel) Recompile(ctx context.Context, jsx string) (store.Shell, error) {
	if strings.TrimSpace(jsx) == "" {
		return store.Shell{}, errors.New("jsx is empty: give the complete source of one React component")
	}
	if k.opts.CompileShell != nil {
		if err := k.opts.CompileShell(ctx, jsx); err != nil {
			return store.Shell{}, fmt.Errorf("%w: %v", ErrShellCompile, err)
		}
	}
	sh, err := k.store.AddShell(ctx, jsx)
	if err != nil {
		return sh, err
	}
	if k.opts.OnShell != nil {
		k.opts.OnShell(sh)
	}
	return sh, nil
}

// ShellSource is the JSX of the newest shell, "" when none was built yet.
func (k *Kernel) ShellSource(ctx context.Context) (string, error) {
	sh, err := k.store.LatestShell(ctx, "")
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return sh.Source, err
}

// LastGoodShell is the newest shell that did not fail to render; ok is
// false when there is none.
func (k *Kernel) LastGoodShell(ctx context.Context) (sh store.Shell, ok bool, err error) {
	shells, err := k.store.Shells(ctx, 50)
	if err != nil {
		return store.Shell{}, false, err
	}
	for _, sh := range shells {
		if sh.Status != store.ShellFailed {
			return sh, true, nil
		}
	}
	return store.Shell{}, false, nil
}

// ShellRendered records what a page reported about a shell: rendered, or
// failed with the error it gave (the LLM is told on its next call).
func (k *Kernel) ShellRendered(ctx context.Context, id int64, status, errText string) error {
	if status != store.ShellRendered && status != store.ShellFailed {
		return fmt.Errorf("status %q: want %q or %q", status, store.ShellRendered, store.ShellFailed)
	}
	return k.store.SetShellStatus(ctx, id, status, errText)
}

// LatestShell is the newest shell recompile stored, whatever its status.
func (k *Kernel) LatestShell(ctx context.Context) (store.Shell, error) {
	return k.store.LatestShell(ctx, "")
}

// Untouched reports a first visit: no shell built and no conversation
// saved yet (the blocks may be the seeded defaults).
func (k *Kernel) Untouched(ctx context.Context) (bool, error) {
	shells, err := k.store.Shells(ctx, 1)
	if err != nil {
		return false, err
	}
	convs, err := k.store.Conversations(ctx)
	if err != nil {
		return false, err
	}
	return len(shells) == 0 && len(convs) == 0, nil
}

// shellErrorSetting remembers which failed shell the LLM was told about.
const shellErrorSetting = "shell_error_reported"

// shellNotice tells the LLM, once, that the last shell it built failed to
// render in the page (the page keeps the previous one on screen).
func (k *Kernel) shellNotice(ctx context.Context) string {
	sh, err := k.store.LatestShell(ctx, "")
	if err != nil || sh.Status != store.ShellFailed {
		return ""
	}
	id := fmt.Sprint(sh.ID)
	if told, _, _ := k.store.Setting(ctx, shellErrorSetting); told == id {
		return ""
	}
	if err := k.store.SetSetting(ctx, shellErrorSetting, id); err != nil {
		k.log.Warn("remembering a reported shell error", "err", err)
	}
	return fmt.Sprintf(promptText("shell_failed.md"), sh.ID, sh.Error)
}
