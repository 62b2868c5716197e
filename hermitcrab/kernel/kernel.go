// Package kernel opens a hermitcrab instance's data directory and wires
// its concerns over the one store there: blocks, shells, the network, the
// conversation with the LLM and the wake triggers. The web server and the
// instance's endpoint take a Kernel; the hermitcrab package offers it to
// commands and library users. See docs/design/hermitcrab.md.
package kernel

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/blocks"
	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/fetch"
	"github.com/llmkernels/kernels/hermitcrab/network"
	"github.com/llmkernels/kernels/hermitcrab/secrets"
	"github.com/llmkernels/kernels/hermitcrab/shells"
	"github.com/llmkernels/kernels/hermitcrab/skills"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/hermitcrab/trigger"
	"github.com/llmkernels/kernels/hermitcrab/wakes"
	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/mcp"
)

// Options configure a Kernel. Zero values take the defaults.
type Options struct {
	// Client sends LLM requests. Required for calls; block and prompt
	// operations work without it. Conversation().SetClient replaces it.
	Client *llm.Client
	// Model, when set, replaces the wake block's model on every tier; the
	// wake block still decides everything else.
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
	// NoPTC stops code execution from calling the read-only tools
	// (programmatic tool calling, on by default: conversation.Options).
	NoPTC bool
	// Browser relays browser tools to an attached page; nil answers them
	// with an error saying no browser is attached.
	Browser conversation.Browser
	// CompileShell checks JSX given to recompile (the web shell compiles it
	// with esbuild); an error goes back to the LLM as the tool result. Nil
	// only refuses empty JSX.
	CompileShell func(ctx context.Context, jsx string) error
	// OnShell is told of every shell recompile stores (the web shell pushes
	// it to the page).
	OnShell func(store.Shell)
	// WebRequest is the host policy of the web_request and fetch_url tools
	// and of watched pages; the zero value denies loopback and private
	// addresses.
	WebRequest fetch.Policy
	// Beach is the beach URL the network tools and the inbox trigger use;
	// empty: the data directory's setting (Network().SetBeach), else
	// network.DefaultBeach.
	Beach string
	// WakeCaps are the person's daily caps on wakes and their cost; zero
	// fields take wakes.DefaultCaps. The wake block may only lower them.
	WakeCaps trigger.Caps
	// OnWake is told of every wake a trigger fires (or a cap skips), when
	// it starts and when it ends (the web shell shows them).
	OnWake func(store.Wake)
	// MCPCallTimeout bounds one call of an MCP server's tool (the servers
	// in the data directory, mcp.go); default 2 minutes.
	MCPCallTimeout time.Duration
	// MCPConnector has the API call the tools of the MCP servers at https
	// URLs itself (Anthropic's MCP connector, beta), in place of the
	// kernel; set it only with the Anthropic provider. A server with
	// headers other than "Authorization: Bearer …" stays the kernel's.
	MCPConnector bool
	// NoMCP leaves the MCP servers of the data directory out: none is
	// contacted or offered (serve --demo, which promises no network call,
	// on the person's own data directory).
	NoMCP bool
	// Observe receives LLM and tool events as they happen (progress lines).
	Observe func(llm.Event)
	Log     *slog.Logger
}

// Kernel is a hermitcrab instance: its data directory, the store in it,
// and the concerns that work on them.
type Kernel struct {
	dir    string
	store  *store.Store
	blocks *blocks.Blocks
	shells *shells.Shells
	net    *network.Agent
	conv   *conversation.Caller
	wakes  *wakes.Runner
	mcp    *mcp.Set // nil without servers
}

// The errors of what the kernel keeps, as the store gives them (so a
// server maps them to statuses without reaching into the store, as os
// names fs's errors).
var (
	ErrNotFound = store.ErrNotFound // a block, conversation or shell that does not exist
	ErrConflict = store.ErrConflict // a block created twice, or written on a stale version
	ErrTooLarge = store.ErrTooLarge // a block over the size limit
)

// DataDir is the default data directory: $HERMITCRAB_DATA, else
// $XDG_DATA_HOME/hermitcrab, else ~/.local/share/hermitcrab. Without any
// of them it is an option error of "data".
func DataDir() (string, error) {
	if d := os.Getenv("HERMITCRAB_DATA"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "hermitcrab"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", option.Errorf("data", "is not set, and there is no default: set HERMITCRAB_DATA or HOME (%w)", err)
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
	b, err := blocks.New(st, blocks.Options{MaxBlockBytes: opts.MaxBlockBytes, ShellFile: opts.ShellFile, ReadOnly: opts.ReadOnly, Log: log})
	if err != nil {
		return nil, errors.Join(err, st.Close())
	}
	k := &Kernel{dir: dir, store: st, blocks: b}
	k.shells = shells.New(st, shells.Options{Compile: opts.CompileShell, OnShell: opts.OnShell, Log: log})
	k.net = network.New(dir, st, b, network.Options{Beach: opts.Beach})
	web := fetch.New(opts.WebRequest)
	var connector map[string]llm.MCPServer
	if !opts.NoMCP {
		k.mcp, connector = openMCP(dir, opts.MCPCallTimeout, opts.MCPConnector, log)
	}
	k.conv = conversation.New(conversation.Parts{Store: st, Blocks: b, Shells: k.shells, Network: k.net, Fetch: web},
		conversation.Options{Client: opts.Client, Model: opts.Model, TierModels: opts.TierModels, ServerTools: opts.ServerTools, NoPTC: opts.NoPTC,
			MCP: k.mcp, MCPConnector: connector, Skills: &skills.Dir{Path: filepath.Join(dir, SkillsDir)}, Browser: opts.Browser, Observe: opts.Observe, Log: log})
	k.wakes = wakes.New(wakes.Parts{Dir: dir, Store: st, Blocks: b, Conversation: k.conv, Network: k.net, Fetch: web},
		wakes.Options{Caps: opts.WakeCaps, OnWake: opts.OnWake, Log: log})
	return k, nil
}

// SkillsDir holds the instance's skills in the data directory: a folder
// a skill, with its SKILL.md.
const SkillsDir = "skills"

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

// Close closes the store, and the connections to the MCP servers (ending
// the commands of those run over stdio).
func (k *Kernel) Close() error {
	var err error
	if k.mcp != nil {
		err = k.mcp.Close()
	}
	return errors.Join(err, k.store.Close())
}

// Dir is the instance's data directory.
func (k *Kernel) Dir() string { return k.dir }

// Ready seeds an empty store and keeps the touchstone current
// (blocks.Blocks.Ready): every command that reads blocks calls it first.
func (k *Kernel) Ready(ctx context.Context) error { return k.blocks.Ready(ctx) }

// Blocks are the instance's blocks.
func (k *Kernel) Blocks() *blocks.Blocks { return k.blocks }

// Shells are the React shells the instance built.
func (k *Kernel) Shells() *shells.Shells { return k.shells }

// Network is the instance on the network: its key, its beach, and what it
// publishes, sends and receives there.
func (k *Kernel) Network() *network.Agent { return k.net }

// Conversation makes the instance's calls to the LLM on its
// conversations.
func (k *Kernel) Conversation() *conversation.Caller { return k.conv }

// Wakes run the instance's wake triggers.
func (k *Kernel) Wakes() *wakes.Runner { return k.wakes }

// Secrets are the instance's API key, webhook secret and MCP token, kept
// in its data directory.
func (k *Kernel) Secrets() secrets.Dir { return secrets.Dir(k.dir) }
