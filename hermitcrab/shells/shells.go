// Package shells keeps the React shells an instance builds with its
// recompile tool: each checked, stored with what the page said of its
// render, and the last one that rendered served again on a reload.
package shells

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/llmkernels/kernels/hermitcrab/store"
)

// Shell is a shell recompile stored (store.Shell).
type Shell = store.Shell

// Failed is what a page reports of a shell that threw while rendering.
const Failed = store.ShellFailed

// ErrCompile is wrapped by Recompile's error when the JSX does not compile.
var ErrCompile = errors.New("the shell did not compile, so the previous one stays")

// Options configure Shells.
type Options struct {
	// Compile checks JSX given to recompile (the web shell compiles it
	// with esbuild); its error goes back to the LLM. Nil only refuses
	// empty JSX.
	Compile func(ctx context.Context, jsx string) error
	// OnShell is told of every shell Recompile stores (the web shell
	// pushes it to the page).
	OnShell func(store.Shell)
	Log     *slog.Logger
}

// Shells are the shells of one instance's store.
type Shells struct {
	store *store.Store
	opts  Options
	log   *slog.Logger
}

// New makes the Shells of st.
func New(st *store.Store, o Options) *Shells {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Shells{store: st, opts: o, log: log}
}

// Recompile checks and stores a new shell, and tells Options.OnShell. JSX
// that does not compile is an error wrapping ErrCompile that carries the
// compiler's message (line and column) for the LLM.
func (k *Shells) Recompile(ctx context.Context, jsx string) (store.Shell, error) {
	if strings.TrimSpace(jsx) == "" {
		return store.Shell{}, errors.New("jsx is empty: give the complete source of one React component")
	}
	if k.opts.Compile != nil {
		if err := k.opts.Compile(ctx, jsx); err != nil {
			return store.Shell{}, fmt.Errorf("%w: %v", ErrCompile, err)
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

// Source is the JSX of the newest shell, "" when none was built yet.
func (k *Shells) Source(ctx context.Context) (string, error) {
	sh, err := k.store.LatestShell(ctx, "")
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return sh.Source, err
}

// LastGood is the newest shell that did not fail to render; ok is false
// when there is none.
func (k *Shells) LastGood(ctx context.Context) (sh store.Shell, ok bool, err error) {
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

// Rendered records what a page reported about a shell: rendered, or failed
// with the error it gave (the LLM is told on its next call).
func (k *Shells) Rendered(ctx context.Context, id int64, status, errText string) error {
	if status != store.ShellRendered && status != store.ShellFailed {
		return fmt.Errorf("status %q: want %q or %q", status, store.ShellRendered, store.ShellFailed)
	}
	return k.store.SetShellStatus(ctx, id, status, errText)
}

// Untouched reports a first visit: no shell built and no conversation
// saved yet (the blocks may be the seeded defaults).
func (k *Shells) Untouched(ctx context.Context) (bool, error) {
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

//go:embed shell_failed.md
var shellFailed string

// Notice tells the LLM, once, that the last shell it built failed to
// render in the page (the page keeps the previous one on screen); "" when
// there is nothing to tell.
func (k *Shells) Notice(ctx context.Context) string {
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
	return fmt.Sprintf(strings.TrimSpace(shellFailed), sh.ID, sh.Error)
}
