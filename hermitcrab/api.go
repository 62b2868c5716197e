package hermitcrab

import (
	"github.com/llmkernels/kernels/hermitcrab/blocks"
	"github.com/llmkernels/kernels/hermitcrab/network"
	"github.com/llmkernels/kernels/pscale"
)

// The public surface a command needs, named here so it imports the root
// package only.
type (
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
)

// DefaultBeach is the beach an instance uses when none is named.
const DefaultBeach = network.DefaultBeach

// ReadImportFiles reads files for Import.
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
