package hermitcrab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/migrate"
	"github.com/llmkernels/kernels/hermitcrab/shell"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/hermitcrab/trigger"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/pscale"
)

// Options configure a Kernel. Zero values take the defaults.
type Options struct {
	// Client sends LLM requests. Required for calls; block and prompt
	// commands work without it.
	Client *llm.Client
	// Model, when set, replaces the wake block's model on every tier (the
	// --model flag); the wake block still decides everything else.
	Model string
	// TierModels are the models, by tier, of a tier whose wake block names
	// none (the config file's hermitcrab.models), in place of the spec's
	// fallbacks; the wake block's own choice always wins.
	TierModels map[int]string
	// ShellFile seeds an empty store from this shell file instead of the
	// default shell ({"blocks": {…}} or a flat map of blocks).
	ShellFile string
	// MaxBlockBytes limits every block write; default 64 KiB.
	MaxBlockBytes int
	// ReadOnly opens the store read-only: nothing in the data directory is
	// created or written (Ready writes nothing). Without a store file yet,
	// the kernel holds a store in memory seeded as a new one would be.
	ReadOnly bool
	// ServerTools declares web_search, web_fetch and code_execution, which
	// only the Anthropic provider runs. Set it false for other providers.
	ServerTools bool
	// NoPTC stops code execution from calling the read-only tools. By
	// default (§8.3) block_read, block_list, bsp, resolve, get_datetime and
	// get_source carry allowed_callers whenever code_execution is active
	// (programmatic tool calling).
	NoPTC bool
	// Browser relays browser tools to an attached page; nil answers them
	// with an error saying no browser is attached.
	Browser Browser
	// CompileShell checks JSX given to recompile (the web shell compiles it
	// with esbuild); an error goes back to the LLM as the tool result. Nil
	// only refuses empty JSX.
	CompileShell func(ctx context.Context, jsx string) error
	// OnShell is told of every shell recompile stores (the web shell pushes
	// it to the page).
	OnShell func(store.Shell)
	// WebRequest is the host policy of the web_request and fetch_url tools;
	// the zero value denies loopback and private addresses.
	WebRequest WebPolicy
	// Beach is the beach URL the network tools and the inbox trigger use
	// (--beach, $HERMITCRAB_BEACH); empty: the data directory's setting
	// (SetBeach), else DefaultBeach.
	Beach string
	// WakeCaps are the person's daily caps on wakes and their cost (the
	// --max-wakes and --max-wake-cost flags); zero fields take
	// DefaultWakeCaps. The wake block may only lower them.
	WakeCaps trigger.Caps
	// Now is the kernel's clock for wake triggers and their caps; nil is
	// time.Now (tests set one).
	Now func() time.Time
	// OnWake is told of every wake a trigger fires (or a cap skips), when
	// it starts and when it ends (the web shell shows them).
	OnWake func(store.Wake)
	// Observe receives LLM and tool events as they happen (progress lines).
	Observe func(llm.Event)
	Log     *slog.Logger
}

// Browser runs a browser tool (clipboard_write, speak, download, …) in the
// page attached to the kernel, and returns its answer.
type Browser interface {
	Call(ctx context.Context, tool string, input json.RawMessage) (llm.ToolOutput, error)
}

// Kernel is a hermitcrab instance: its blocks, conversations and shells in
// one SQLite file, and the calls that animate them.
type Kernel struct {
	opts   Options
	client atomic.Pointer[llm.Client]
	store  *store.Store
	dir    string
	log    *slog.Logger
	// isPrivate classifies addresses for web_request and fetch_url.
	isPrivate func(net.IP) bool
	// touchstoneReleased is when the embedded touchstone was written
	// (shell.TouchstoneUpdated); a persisted copy changed after it wins.
	touchstoneReleased time.Time
	net                network
	wake               wakeState
}

// DataDir is the default data directory: $HERMITCRAB_DATA, else
// $XDG_DATA_HOME/hermitcrab, else ~/.local/share/hermitcrab.
func DataDir() (string, error) {
	if d := os.Getenv("HERMITCRAB_DATA"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "hermitcrab"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no data directory: set --data, HERMITCRAB_DATA or HOME (%w)", err)
	}
	return filepath.Join(home, ".local", "share", "hermitcrab"), nil
}

// Open opens (creating if needed, unless Options.ReadOnly) the instance in
// dir.
func Open(dir string, opts Options) (*Kernel, error) {
	if err := opts.WebRequest.Check(); err != nil {
		return nil, err
	}
	st, err := openStore(dir, opts)
	if err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	released, err := time.Parse(time.RFC3339, shell.TouchstoneUpdated)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("shell.TouchstoneUpdated %q: %w", shell.TouchstoneUpdated, err), st.Close())
	}
	k := &Kernel{opts: opts, store: st, dir: dir, log: log, touchstoneReleased: released, isPrivate: privateIP}
	k.client.Store(opts.Client)
	return k, nil
}

// StoreFile is the SQLite store's name in the data directory.
const StoreFile = "hermitcrab.db"

func openStore(dir string, opts Options) (*store.Store, error) {
	path, so := filepath.Join(dir, StoreFile), store.Options{MaxBlockBytes: opts.MaxBlockBytes}
	if !opts.ReadOnly {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("data directory %s: %w", dir, err)
		}
		return store.Open(path, so)
	}
	st, err := store.OpenReadOnly(path, so)
	if errors.Is(err, fs.ErrNotExist) {
		return store.OpenMemory(so)
	}
	if err != nil {
		return nil, err
	}
	return unseededAsNew(st, so)
}

// unseededAsNew returns st, or, when st holds no blocks, an in-memory store
// with st's settings in its place, which Ready seeds as a new instance's.
// A command that opens the store without reading blocks (beach use, key
// set) creates it without seeding it, and the next command that writes
// blocks seeds it (Ready); until then a read-only command sees the shell
// the instance will start with, not an empty one.
func unseededAsNew(st *store.Store, so store.Options) (*store.Store, error) {
	ctx := context.Background()
	empty, err := st.Empty(ctx)
	if err != nil {
		return nil, errors.Join(err, st.Close())
	}
	if !empty {
		return st, nil
	}
	settings, err := st.Settings(ctx)
	if err != nil {
		return nil, errors.Join(err, st.Close())
	}
	if err := st.Close(); err != nil {
		return nil, err
	}
	mem, err := store.OpenMemory(so)
	if err != nil {
		return nil, err
	}
	for k, v := range settings {
		if err := mem.SetSetting(ctx, k, v); err != nil {
			return nil, errors.Join(err, mem.Close())
		}
	}
	return mem, nil
}

// SetClient sets the LLM client, for a server that learns the API key
// after it started.
func (k *Kernel) SetClient(c *llm.Client) { k.client.Store(c) }

// Client is the LLM client, nil until one is configured.
func (k *Kernel) Client() *llm.Client { return k.client.Load() }

// Close closes the store.
func (k *Kernel) Close() error { return k.store.Close() }

// Dir is the instance's data directory.
func (k *Kernel) Dir() string { return k.dir }

// InMemory tells whether the kernel was opened read-only on a data
// directory that has no store yet, or a store without blocks: it holds the
// default shell in memory.
func (k *Kernel) InMemory() bool { return k.store.InMemory() }

// Ready seeds an empty store (with the default shell, or Options.ShellFile)
// and keeps the touchstone current: the kernel's embedded touchstone is
// persisted when missing, and replaces a persisted copy older than it; a
// copy changed after it (by the LLM evolving the format) wins. Every
// command that reads blocks calls it first; importing does not, so an
// import into a new data directory is not mixed with the default shell.
// On a store opened with Options.ReadOnly it writes nothing (a store held
// in memory is seeded).
func (k *Kernel) Ready(ctx context.Context) error {
	if k.opts.ReadOnly && !k.store.InMemory() {
		return nil // the blocks as stored; the next command that writes syncs them
	}
	empty, err := k.store.Empty(ctx)
	if err != nil {
		return err
	}
	if empty {
		blocks, err := k.seedBlocks()
		if err != nil {
			return err
		}
		if _, _, err := k.store.PutMany(ctx, blocks, false); err != nil {
			return fmt.Errorf("seeding the shell: %w", err)
		}
		k.log.Info("seeded an empty store", "blocks", len(blocks))
	}
	return k.syncTouchstone(ctx)
}

func (k *Kernel) seedBlocks() (map[string][]byte, error) {
	var blocks map[string]*pscale.Block
	if k.opts.ShellFile != "" {
		data, err := os.ReadFile(k.opts.ShellFile)
		if err != nil {
			return nil, fmt.Errorf("--shell: %w", err)
		}
		res, err := migrate.File(k.opts.ShellFile, data, nil)
		if err != nil {
			return nil, fmt.Errorf("--shell %s: %w", k.opts.ShellFile, err)
		}
		blocks = res.Blocks
	} else {
		var err error
		if blocks, err = shell.Default(); err != nil {
			return nil, err
		}
	}
	return encodeBlocks(blocks)
}

func (k *Kernel) syncTouchstone(ctx context.Context) error {
	embedded, err := shell.Touchstone()
	if err != nil {
		return err
	}
	cur, err := k.store.Block(ctx, "touchstone")
	expect := int64(0)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return err
	case cur.Updated.After(k.touchstoneReleased):
		return nil
	default:
		expect = cur.Version
	}
	data, err := blockJSON(embedded)
	if err != nil {
		return err
	}
	if _, err := k.store.Put(ctx, "touchstone", data, expect); err != nil {
		return fmt.Errorf("persisting the touchstone: %w", err)
	}
	return nil
}
