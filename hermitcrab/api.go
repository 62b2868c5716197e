package hermitcrab

import (
	"github.com/llmkernels/kernels/hermitcrab/beach"
	"github.com/llmkernels/kernels/hermitcrab/blocks"
	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/fetch"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/hermitcrab/network"
	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/hermitcrab/secrets"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/hermitcrab/trigger"
	"github.com/llmkernels/kernels/hermitcrab/wakes"
	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/pscale"
)

// The kernel and what a caller names to use it: plain options in, plain
// results out. Each is defined in the package of its concern; they are
// named here so that a command or a library user needs this package only.
type (
	// Kernel is a hermitcrab instance (kernel.Kernel): Blocks, Shells,
	// Network, Conversation, Wakes and Secrets are its concerns.
	Kernel = kernel.Kernel
	// Options configure a Kernel (kernel.Options).
	Options = kernel.Options
	// OptionError is the error for an option the kernel cannot take:
	// which (Field, as the library names it) and what is wrong (Problem).
	OptionError = option.Error
	// WebPolicy says which hosts web_request, fetch_url and watch
	// triggers may reach (fetch.Policy).
	WebPolicy = fetch.Policy
	// Caps are daily caps on wakes and their cost (trigger.Caps).
	Caps = trigger.Caps
	// CallOptions tune one call (conversation.CallOptions).
	CallOptions = conversation.CallOptions
	// CallResult is what a call did (conversation.CallResult).
	CallResult = conversation.CallResult
	// WakeReport is what one pass over the triggers did (wakes.Report).
	WakeReport = wakes.Report
	// WakeStatus is the triggers, caps and wakes (wakes.Status).
	WakeStatus = wakes.Status
	// ImportSource is one file to import (blocks.ImportSource).
	ImportSource = blocks.ImportSource
	// ImportResult says what an import did (blocks.ImportResult).
	ImportResult = blocks.ImportResult
	// PassportSpec is what the instance publishes about itself.
	PassportSpec = network.PassportSpec
	// Outgoing is a message the instance sends.
	Outgoing = network.Outgoing
	// FetchOptions tune an inbox fetch.
	FetchOptions = network.FetchOptions
	// BeachInUse is the beach the instance talks to.
	BeachInUse = network.BeachInUse
	// Refused is an entry a beach handed out that did not verify.
	Refused = beach.Refused
	// ToolList is the active tools and their definitions' size
	// (conversation.ToolList).
	ToolList = conversation.ToolList
	// Usage is what LLM calls cost, their tokens as billed (store.Usage).
	Usage = store.Usage
)

const (
	// StoreFile is the store's name in the data directory.
	StoreFile = kernel.StoreFile
	// MCPFile is where the MCP servers are kept in the data directory.
	MCPFile = kernel.MCPFile
	// SkillsDir holds the skills in the data directory.
	SkillsDir = kernel.SkillsDir
	// DefaultBeach is the beach an instance uses when none is named.
	DefaultBeach = network.DefaultBeach
	// KeyFromEnvironment is where an API key in use came from when the
	// environment gave it (Kernel.Secrets().APIKey).
	KeyFromEnvironment = secrets.FromEnvironment
)

// The tiers of a call: light (tier 1), present (2, the default) and deep
// (3, the boot's).
const (
	Light   = prompt.Light
	Present = prompt.Present
	Deep    = prompt.Deep
)

// Open opens (creating if needed, unless Options.ReadOnly) the instance in
// dir.
func Open(dir string, o Options) (*Kernel, error) { return kernel.Open(dir, o) }

// DataDir is the default data directory: $HERMITCRAB_DATA, else
// $XDG_DATA_HOME/hermitcrab, else ~/.local/share/hermitcrab.
func DataDir() (string, error) { return kernel.DataDir() }

// DefaultWakeCaps are the person's daily caps when none are given.
func DefaultWakeCaps() Caps { return wakes.DefaultCaps() }

// BootTools are the tools a new instance starts with.
func BootTools() []string { return conversation.BootTools() }

// Describe turns an LLM or tool event into one progress line and its
// level; ok is false for events not worth a line.
func Describe(e llm.Event) (line, level string, ok bool) { return conversation.Describe(e) }

// ReadImportFiles reads files for Blocks().Import.
func ReadImportFiles(paths []string) ([]ImportSource, error) { return blocks.ReadImportFiles(paths) }

// ParseAddress reads a block address as a command is given it ("0.12"):
// the edge where text becomes the typed address the blocks take. Its
// error is an OptionError of the field "path".
func ParseAddress(s string) (pscale.Address, error) { return blocks.ParseAddress("path", s) }

// ParseQuery reads a BSP query as a command is given it: the mode's name
// (blank: what is given decides), the spindle (an address, "" for none)
// and the point (a pscale, "" for none); see pscale.ParseQuery.
func ParseQuery(mode, spindle, point string) (pscale.Query, error) {
	return pscale.ParseQuery(mode, spindle, point)
}
