package migrate

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/pscale"
)

// g0JSON holds the texts migration writes into blocks: the pscale 0 of a
// block made from G0 files, the Naming node, and the label of a group.
//
//go:embed g0.json
var g0JSON []byte

type g0Texts struct {
	Roots  map[string]string `json:"roots"`
	Naming string            `json:"naming"`
	Group  string            `json:"group"`
}

// memFile is one G0 memory file: its localStorage key, its memFS path and
// its content.
type memFile struct {
	key, path, content string
}

// memEntry is a memFile on its way into a block, with what orders it.
type memEntry struct {
	memFile
	rank     int    // 0 numbered, 1 other: numbered files come first
	whole    string // integer part of the number, leading zeros dropped
	fraction string // digits after the point
}

// maxNamingEntries is how many identity and name files the Naming node
// takes: nine groups of nine. (History and stash grow instead.) Past that,
// the rest go to stash.
const maxNamingEntries = 9 * 9

// maxEntryChars is the longest entry a G0 file becomes: a longer file is
// split into consecutive entries ("[PATH, part 2 of 3] …"), so that nine
// entries fit in one node that can move to a block of its own when the
// block reaches its size limit (the kernel's history-N rule). A Naming file
// that long goes to stash, where it can be split.
const maxEntryChars = 2000

// Where G0 files go (clean-build spec, "Migration from G0").
const (
	historyBlock      = "history"
	stashBlock        = "stash"
	constitutionBlock = "constitution"
	namingNode        = "0.5"
)

func (r *Result) migrateG0(files []memFile, defaults map[string]*pscale.Block) error {
	var texts g0Texts
	if err := json.Unmarshal(g0JSON, &texts); err != nil {
		return fmt.Errorf("g0.json (embedded): %w", err)
	}
	r.note("G0 data found (%d hcmem: files, no hc: blocks): migrating as the clean-build spec describes", len(files))

	byBlock := map[string][]memEntry{}
	for _, f := range files {
		name, e := classify(f)
		byBlock[name] = append(byBlock[name], e)
	}
	r.overflowNaming(byBlock)
	for _, name := range slices.Sorted(maps.Keys(byBlock)) {
		entries := byBlock[name]
		sort.SliceStable(entries, func(i, j int) bool { return entries[i].less(entries[j]) })
		b, err := r.startBlock(name, defaults, texts)
		if err != nil {
			return err
		}
		if name != constitutionBlock {
			if err := r.appendAll(b, name, entries, texts.Group); err != nil {
				return err
			}
			continue
		}
		if err := r.ensureNode(b, name, namingNode, texts.Naming); err != nil {
			return err
		}
		if err := r.place(b, name, namingNode, entries, texts.Group); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(defaults)) {
		if _, ok := r.Blocks[name]; ok || defaults[name] == nil {
			continue
		}
		b, err := clone(defaults[name])
		if err != nil {
			return fmt.Errorf("default block %q: %w", name, err)
		}
		r.Blocks[name] = b
		r.note("block %q seeded from the defaults", name)
	}
	return nil
}

// overflowNaming sends to stash the identity and name files the Naming
// node cannot take: those longer than one entry, and those past the 81st.
func (r *Result) overflowNaming(byBlock map[string][]memEntry) {
	naming := byBlock[constitutionBlock]
	sort.SliceStable(naming, func(i, j int) bool { return naming[i].less(naming[j]) })
	var kept []memEntry
	for _, e := range naming {
		switch {
		case len(entryText(e)) > maxEntryChars:
			r.note("G0 file %s (key %q) is longer than one Naming entry (%d characters): it goes to stash, split into entries", e.path, e.key, maxEntryChars)
		case len(kept) == maxNamingEntries:
			r.note("G0 file %s (key %q): Naming (constitution %s) takes %d files, and this is one more: it goes to stash", e.path, e.key, namingNode, maxNamingEntries)
		default:
			kept = append(kept, e)
			continue
		}
		e.rank = 2 // after stash's own files
		byBlock[stashBlock] = append(byBlock[stashBlock], e)
	}
	if len(kept) == 0 {
		delete(byBlock, constitutionBlock)
		return
	}
	byBlock[constitutionBlock] = kept
}

// classify says which block a G0 file goes to, and how it sorts there.
func classify(f memFile) (string, memEntry) {
	base := path.Base(f.path)
	if ext := path.Ext(base); strings.ContainsFunc(ext, unicode.IsLetter) {
		base = strings.TrimSuffix(base, ext) // "M-0.1.md" → "M-0.1", but "M-0.1" stays
	}
	e := memEntry{memFile: f, rank: 1}
	if whole, fraction, ok := numbered(base, 'm'); ok {
		e.rank, e.whole, e.fraction = 0, whole, fraction
		return historyBlock, e
	}
	if whole, fraction, ok := numbered(base, 's'); ok {
		e.rank, e.whole, e.fraction = 0, whole, fraction
		return stashBlock, e
	}
	lower := strings.ToLower(base)
	if strings.Contains(lower, "identity") || strings.Contains(lower, "name") || strings.Contains(lower, "naming") {
		return constitutionBlock, e
	}
	return stashBlock, e
}

// numbered reads names such as "M-0.1", "M1", "m_12" or "M-3-notes": the
// letter, an optional "-" or "_", then a number of digits and points. It
// returns the integer part without leading zeros and the digits after the
// first point.
func numbered(base string, letter byte) (whole, fraction string, ok bool) {
	if base == "" || base[0]|0x20 != letter {
		return "", "", false
	}
	rest := base[1:]
	if rest != "" && (rest[0] == '-' || rest[0] == '_') {
		rest = rest[1:]
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
	if end < 0 {
		end = len(rest)
	}
	num := rest[:end]
	if num == "" || num[0] < '0' || num[0] > '9' {
		return "", "", false
	}
	w, f, _ := strings.Cut(num, ".")
	return strings.TrimLeft(w, "0"), strings.ReplaceAll(f, ".", ""), true
}

// less orders numbered files by number (integer part numerically, then the
// fraction as decimal digits), then the others, each tie broken by path.
func (e memEntry) less(o memEntry) bool {
	if e.rank != o.rank {
		return e.rank < o.rank
	}
	if len(e.whole) != len(o.whole) {
		return len(e.whole) < len(o.whole)
	}
	if e.whole != o.whole {
		return e.whole < o.whole
	}
	if e.fraction != o.fraction {
		return e.fraction < o.fraction
	}
	return e.path < o.path
}

// startBlock returns the block entries for name go into: the one already in
// the result, a copy of the default, or a new block saying it came from G0.
func (r *Result) startBlock(name string, defaults map[string]*pscale.Block, texts g0Texts) (*pscale.Block, error) {
	if b, ok := r.Blocks[name]; ok {
		return b, nil
	}
	if d := defaults[name]; d != nil {
		b, err := clone(d)
		if err != nil {
			return nil, fmt.Errorf("default block %q: %w", name, err)
		}
		r.Blocks[name] = b
		r.note("block %q starts from the defaults; G0 entries are added to it", name)
		return b, nil
	}
	b := &pscale.Block{Place: 1}
	if err := pscale.Write(b, mustAddress("0"), texts.Roots[name]); err != nil {
		return nil, fmt.Errorf("block %q: %w", name, err)
	}
	r.Blocks[name] = b
	r.note("block %q is new (no default given): its pscale 0 says it was migrated from G0", name)
	return b, nil
}

// ensureNode makes sure the node at addr exists, writing text there when it
// does not.
func (r *Result) ensureNode(b *pscale.Block, name, addr, text string) error {
	a := mustAddress(addr)
	_, err := pscale.Read(b, a)
	var pe *pscale.PathError
	if !errors.As(err, &pe) {
		return err
	}
	if err := pscale.Write(b, a, text); err != nil {
		return fmt.Errorf("block %q: %w", name, err)
	}
	r.note("block %q: node %s created for the G0 entries", name, addr)
	return nil
}

// appendAll adds entries as the block's newest (pscale.AppendEntry), growing
// it as it fills; a node that fills is labelled with the G0 files it holds,
// since no LLM compresses them here.
func (r *Result) appendAll(b *pscale.Block, name string, entries []memEntry, groupText string) error {
	label := func(_ pscale.Address, n *pscale.Node) string {
		return strings.NewReplacer("{first}", entryPath(n, 1), "{last}", entryPath(n, -1)).Replace(groupText)
	}
	for _, e := range entries {
		parts := entryParts(e)
		for i, text := range parts {
			addr, err := pscale.AppendEntry(b, text, label)
			if err != nil {
				return fmt.Errorf("block %q: G0 file %s: %w", name, e.path, err)
			}
			if len(parts) == 1 {
				r.note("G0 file %s (key %q) → block %q at %s", e.path, e.key, name, addr)
			} else {
				r.note("G0 file %s (key %q), part %d of %d → block %q at %s", e.path, e.key, i+1, len(parts), name, addr)
			}
		}
	}
	if b.Place > 1 {
		r.note("block %q grew to place %d to take its %d G0 files; earlier notes give addresses as they were when written (each old address gains a 1 after its first digit per growth)", name, b.Place, len(entries))
	}
	return nil
}

// entryText is a G0 file as an entry: "[G0 PATH] content".
func entryText(e memEntry) string {
	text := "[" + e.path + "]"
	if c := strings.TrimSpace(e.content); c != "" {
		text += " " + c
	}
	return text
}

// entryParts is a G0 file as one entry, or as consecutive entries of at
// most maxEntryChars bytes when it is longer: "[PATH, part I of N] content",
// each cut at a line break or a space where there is one.
func entryParts(e memEntry) []string {
	if whole := entryText(e); len(whole) <= maxEntryChars {
		return []string{whole}
	}
	path := clip.Text(e.path, 200)
	room := maxEntryChars - len(path) - len("[, part 999 of 999] ")
	var chunks []string
	for rest := strings.TrimSpace(e.content); rest != ""; {
		cut := len(rest)
		if cut > room {
			cut = room
			for !utf8.RuneStart(rest[cut]) {
				cut--
			}
			if i := strings.LastIndexAny(rest[:cut], "\n "); i > room/2 {
				cut = i + 1
			}
		}
		chunks = append(chunks, strings.TrimSpace(rest[:cut]))
		rest = strings.TrimSpace(rest[cut:])
	}
	if len(chunks) == 0 { // no content, and a path too long to head it whole
		return []string{"[" + path + "]"}
	}
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = fmt.Sprintf("[%s, part %d of %d] %s", path, i+1, len(chunks), c)
	}
	return out
}

// entryPath is the G0 path heading the first (dir 1) or last (dir −1)
// entry below n.
func entryPath(n *pscale.Node, dir int) string {
	for !n.Leaf {
		var next *pscale.Node
		for i := 1; i <= 9; i++ {
			d := i
			if dir < 0 {
				d = 10 - i
			}
			if c := n.Children[d]; c != nil {
				next = c
				break
			}
		}
		if next == nil {
			break
		}
		n = next
	}
	if rest, ok := strings.CutPrefix(n.Text, "["); ok {
		if p, _, ok := strings.Cut(rest, "]"); ok {
			return p
		}
	}
	return "?"
}

// place writes entries at the free digits under parent: directly when there
// are nine or fewer, else in groups of nine under new group nodes.
func (r *Result) place(b *pscale.Block, name, parent string, entries []memEntry, groupText string) error {
	if len(entries) <= 9 {
		return r.placeUnder(b, name, parent, entries)
	}
	for start := 0; start < len(entries); start += 9 {
		group := entries[start:min(start+9, len(entries))]
		g, err := r.nextAddress(b, name, parent)
		if err != nil {
			return err
		}
		label := strings.NewReplacer("{first}", group[0].path, "{last}", group[len(group)-1].path).Replace(groupText)
		if err := pscale.Write(b, mustAddress(g), label); err != nil {
			return fmt.Errorf("block %q: %w", name, err)
		}
		if err := r.placeUnder(b, name, g, group); err != nil {
			return err
		}
	}
	return nil
}

func (r *Result) placeUnder(b *pscale.Block, name, parent string, entries []memEntry) error {
	for _, e := range entries {
		addr, err := r.nextAddress(b, name, parent)
		if err != nil {
			return fmt.Errorf("G0 file %s: %w", e.path, err)
		}
		if err := pscale.Write(b, mustAddress(addr), entryText(e)); err != nil {
			return fmt.Errorf("block %q: %w", name, err)
		}
		r.note("G0 file %s (key %q) → block %q at %s", e.path, e.key, name, addr)
	}
	return nil
}

func (r *Result) nextAddress(b *pscale.Block, name, parent string) (string, error) {
	d, err := pscale.NextDigit(b, mustAddress(parent))
	if err != nil {
		return "", fmt.Errorf("block %q: %w", name, err)
	}
	return fmt.Sprintf("%s.%d", parent, d), nil
}

// mustAddress parses an address this package built from digits and dots.
func mustAddress(s string) pscale.Address {
	a, err := pscale.ParseAddress(s)
	if err != nil {
		panic(fmt.Sprintf("migrate built a bad address %q: %v", s, err))
	}
	return a
}

// clone deep-copies a block through its JSON, so defaults are never changed.
func clone(b *pscale.Block) (*pscale.Block, error) {
	data, err := b.MarshalJSON()
	if err != nil {
		return nil, err
	}
	c, _, err := pscale.Parse(data)
	return c, err
}
