// Package prompt compiles a hermitcrab system prompt from the blocks, as the
// wake block's instructions say (architecture spec §5), and reads each tier's
// invocation parameters from the wake block (§6).
//
// Instructions live at wake 0.9.1–0.9.3 (light, present, deep), one per digit
// 1–9, each "block", "block ADDRESS" or "block ADDRESS PSCALE": block, spindle
// and point mode of BSP. Each runs through pscale.BSP, renders with
// pscale.RenderSection, and the sections join with a blank line. With no
// instructions for the tier (no wake block, or an empty list) the prompt is
// the aperture: the pscale-0 line of every block, in name order.
//
// Choices made where the spec is silent, each pinned by a test:
//   - An instruction that cannot run (a missing block, a path that leaves the
//     tree, a malformed line) does not stop the call: its section says what
//     failed, so the LLM that wrote it can see the problem and repair its
//     wake block, and Compiled.Problems lists it for the kernel's log.
//   - Block mode ("history") on a block of place 2 or more renders its
//     narrative (pscale.RenderNarrative): the top text, each level's
//     compressions along the live edge and the newest entries. A block
//     that grows by compression (the kernel grows history as it fills)
//     would otherwise put every entry it ever held into every prompt; place
//     1 blocks, which every block of the original shell is, render whole.
//   - Tokens are estimated as characters / 4, rounded up: the budgets of the
//     clean-build spec are stated in those terms, and it needs no tokenizer.
package prompt

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/llmkernels/kernels/pscale"
)

// Source gives the compiler the blocks; ErrNoBlock (wrapped) means a block
// does not exist.
type Source interface {
	Block(name string) (*pscale.Block, error)
	Names() ([]string, error)
}

// ErrNoBlock is what a Source wraps when a block does not exist.
var ErrNoBlock = errors.New("no such block")

// Tiers of invocation.
const (
	Light   = 1
	Present = 2
	Deep    = 3
)

// Instruction is one parsed line of a tier's prompt recipe.
type Instruction struct {
	Text    string // the line as written
	Block   string
	Address *pscale.Address // nil: block mode
	Point   *int            // nil: spindle (or block) mode
}

// ParseInstruction reads "block", "block ADDRESS" or "block ADDRESS PSCALE".
func ParseInstruction(line string) (Instruction, error) {
	in := Instruction{Text: line}
	fields := strings.Fields(line)
	if len(fields) == 0 || len(fields) > 3 {
		return in, fmt.Errorf("instruction %q: want \"block\", \"block ADDRESS\" or \"block ADDRESS PSCALE\"", line)
	}
	in.Block = fields[0]
	if len(fields) >= 2 {
		a, err := pscale.ParseAddress(fields[1])
		if err != nil {
			return in, fmt.Errorf("instruction %q: %w", line, err)
		}
		in.Address = &a
	}
	if len(fields) == 3 {
		p, err := pscale.ParsePscale(fields[2])
		if err != nil {
			return in, fmt.Errorf("instruction %q: %w", line, err)
		}
		in.Point = &p
	}
	return in, nil
}

// Section is one compiled section of the prompt.
type Section struct {
	Instruction string `json:"instruction"`
	Text        string `json:"text"`
	Err         string `json:"error,omitempty"`
}

// Compiled is a compiled system prompt.
type Compiled struct {
	Tier     int       `json:"tier"`
	Text     string    `json:"text"`
	Sections []Section `json:"sections"`
	Aperture bool      `json:"aperture"` // no instructions: the pscale-0 aperture was used
	Problems []string  `json:"problems,omitempty"`
}

// Tokens is the prompt's estimated size in tokens.
func (c Compiled) Tokens() int { return EstimateTokens(c.Text) }

// EstimateTokens estimates tokens as characters / 4, rounded up.
func EstimateTokens(s string) int { return (len([]rune(s)) + 3) / 4 }

// Compile builds the system prompt of a tier (1–3).
func Compile(src Source, tier int) (Compiled, error) {
	if tier < Light || tier > Deep {
		return Compiled{}, fmt.Errorf("tier %d: choose 1 (light), 2 (present) or 3 (deep)", tier)
	}
	c := Compiled{Tier: tier}
	lines, err := Instructions(src, tier)
	if err != nil {
		return c, err
	}
	if len(lines) == 0 {
		return aperture(src, c)
	}
	texts := make([]string, 0, len(lines))
	for _, line := range lines {
		s := execute(src, line)
		if s.Err != "" {
			c.Problems = append(c.Problems, s.Err)
		}
		c.Sections = append(c.Sections, s)
		texts = append(texts, s.Text)
	}
	c.Text = strings.Join(texts, "\n\n")
	return c, nil
}

func execute(src Source, line string) Section {
	s := Section{Instruction: line}
	fail := func(err error) Section {
		s.Err = fmt.Sprintf("wake instruction %q: %v", line, err)
		s.Text = fmt.Sprintf("[%s] (this instruction failed: %v)", strings.TrimSpace(line), err)
		return s
	}
	in, err := ParseInstruction(line)
	if err != nil {
		return fail(err)
	}
	b, err := src.Block(in.Block)
	if err != nil {
		return fail(err)
	}
	if in.Address == nil && b.Place > 1 {
		// A block that has grown: its narrative, whose size does not grow
		// with its entries, instead of the whole tree.
		s.Text = pscale.RenderNarrative(in.Block, b)
		return s
	}
	r, err := pscale.BSP(b, pscale.Query{Address: in.Address, Pscale: in.Point})
	if err != nil {
		return fail(fmt.Errorf("block %q: %w", in.Block, err))
	}
	s.Text = pscale.RenderSection(in.Block, r)
	return s
}

func aperture(src Source, c Compiled) (Compiled, error) {
	c.Aperture = true
	names, err := src.Names()
	if err != nil {
		return c, err
	}
	sort.Strings(names)
	lines := make([]string, 0, len(names))
	for _, name := range names {
		b, err := src.Block(name)
		if err != nil {
			return c, err
		}
		line := pscale.RenderAperture(name, b)
		c.Sections = append(c.Sections, Section{Instruction: name, Text: line})
		lines = append(lines, line)
	}
	c.Text = strings.Join(lines, "\n")
	return c, nil
}

// Instructions returns the prompt lines of a tier: the strings at wake
// 0.9.TIER, digits 1–9 in order. No wake block, or no such node, gives none.
func Instructions(src Source, tier int) ([]string, error) {
	return wakeList(src, fmt.Sprintf("0.9.%d", tier))
}

// wakeList reads the digit children of a wake node, in digit order. A
// missing wake block or node is an empty list; other errors are returned.
func wakeList(src Source, path string) ([]string, error) {
	wake, err := src.Block("wake")
	if errors.Is(err, ErrNoBlock) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	addr, err := pscale.ParseAddress(path)
	if err != nil {
		return nil, err
	}
	view, err := pscale.Read(wake, addr)
	var pathErr *pscale.PathError
	if errors.As(err, &pathErr) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("wake %s: %w", path, err)
	}
	digits := make([]string, 0, len(view.Children))
	for d := range view.Children {
		digits = append(digits, d)
	}
	sort.Slice(digits, func(i, j int) bool { return atoi(digits[i]) < atoi(digits[j]) })
	lines := make([]string, 0, len(digits))
	for _, d := range digits {
		if text := strings.TrimSpace(view.Children[d]); text != "" && text != "(branch)" {
			lines = append(lines, text)
		}
	}
	return lines, nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// Blocks is a Source over blocks in memory.
type Blocks map[string]*pscale.Block

// Block returns the named block, or an error wrapping ErrNoBlock.
func (m Blocks) Block(name string) (*pscale.Block, error) {
	if b, ok := m[name]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("block %q: %w", name, ErrNoBlock)
}

// Names lists the blocks.
func (m Blocks) Names() ([]string, error) {
	return slices.Sorted(maps.Keys(m)), nil
}
