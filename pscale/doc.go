// Package pscale reads, walks, edits and renders pscale blocks: the JSON trees
// a hermitcrab instance keeps its constitution, purpose, history and prompt
// recipe in. It is pure: no I/O; besides the standard library it uses only internal/clip.
//
// A block is {"place": N, "tree": {"0": …}}. Each tree node is a string (a
// leaf) or an object with its text at "_" and children at the digit keys.
// An address such as "0.12" walks one key per digit from the tree root, and
// the digit at index i sits at pscale (place−1)−i. BSP is the one read
// operation, in seven modes (block, spindle, point, and the later reference
// walker's ring, dir, disc and star), asked with a Query that ParseQuery
// reads from tool input; Resolve, Read, Write, NextDigit and
// NeedsCompression serve the tools; RenderSection formats BSP results as
// system-prompt sections. Every walk that leaves the tree is an error naming
// the missing digit and the children that do exist; callers add the block
// name: block "purpose": path 0.12: digit 2 not present (children: 1,3).
//
// # Choices where the specs leave room
//
// The architecture spec (hermitcrab-g1-architecture.md §4, §5.3) is the
// contract; where it is silent the original kernel (g1/kernel.js) decided,
// except where that kernel failed silently. Each choice is pinned by a test.
//
//   - Shapes (Parse): "decimal" is a synonym of "place"; if both are given
//     they must agree. Place 0 (a rendition, root text at tree._) becomes
//     place 1 with the old tree moved whole under "0", so 0.x addresses and
//     their pscales are unchanged. A {"tuning", "tree": {"_"}} block with no
//     place becomes place D+1 (D = digits before the tuning's point) with the
//     tree under "0": pscales are unchanged, old addresses gain a leading 0.
//     With no place at all, a tree holding "0" is place 1 (the original read
//     a missing place as 1) and any other tree is a root, wrapped under "0".
//     A bare tree (no "tree" field, "_" or digit keys) follows that rule.
//     Parse says which conversion it made; output is always canonical.
//   - Preservation: fork, sign, tuning and unknown top-level fields, and
//     non-digit keys inside nodes, are kept verbatim (numbers keep their
//     text). Output order is fixed: place, other fields sorted, tree last;
//     in a node "_", then "0".."9", then other keys sorted. Node JSON is not
//     HTML-escaped (blocks hold JSX); json.Marshal of a Block still escapes,
//     an Encoder with SetEscapeHTML(false) does not.
//   - Malformed values are errors, not guesses: "_" that is not a string, a
//     node that is neither string nor object, a place-N tree that is a string,
//     a negative or fractional place, trailing data after the JSON.
//   - Addresses: dots may sit anywhere and repeat ("0.9.4", ".01."); space
//     around the address is trimmed; every other character is an error that
//     names it, so "-0.1" and "1e-5" are refused rather than mis-walked.
//     Numbers are formatted without exponent; a float64 has lost trailing
//     zeros (0.10 walks 0,1), a json.Number or Address.UnmarshalJSON keeps
//     the digits written. Tools should take addresses as strings.
//   - Digit keys 0–9 are all walkable (23.41 may pass through "0" keys); only
//     1–9 are entry slots for NextDigit and NeedsCompression.
//   - BSP: a point not on the spindle is an error listing the spindle's
//     pscales (the original fell back to the last node). A branch with no
//     "_" shows in a spindle as its JSON, as the original did, so the reader
//     still sees what is there.
//   - The reference walker's modes (pscale-commons/bsp-mcp-server): its
//     blocks keep a node's text and digit 0 in one key, "_"; here digit 0 is
//     the key "0", so its hidden directory is the branch at "0", which star
//     lists, reading each entry "ADDRESS" or "BLOCK:ADDRESS" as a reference.
//     An empty mode is inferred as there (a pscale alone is a disc). Where
//     it answers nothing (a walk past the tree, a pscale no node can have,
//     a part the mode does not read) BSP returns an error; an empty list is
//     answered only when it is true, with a note saying why. Addresses are
//     never padded or stripped of zeros. Lists hold a branch's own text
//     (not its JSON) and say whether it has children.
//   - Pscale coercion (ParsePscale): "-3", " -3 " and -3.0 read as -3;
//     fractions, hex, "NaN" and other text are errors.
//   - Read lists digit children only; a child branch with no text shows as
//     "(branch)". NextDigit on a missing path is an error (the original
//     answered 1, which then wrote somewhere unintended); on a leaf it is 1;
//     on a full node it wraps ErrFull. NeedsCompression also returns an error
//     for a missing path, so a typo never reads as "not full".
//   - Write creates missing nodes as text-less branches, turns a leaf on the
//     way into {"_": old}, and on an existing branch sets that node's own "_"
//     (so a compression summary lands on the node whose children it sums).
//   - Growth (AppendEntry, Grow): entries sit at pscale −1 on the live edge
//     (the newest, highest digit at each level). A full node is passed only
//     once it has text (its compression); a full top node grows the block:
//     a new top keeps the description, the old top becomes its digit 1 with
//     the compression as its text, place rises by one, and every node keeps
//     its pscale (old addresses gain a 1 after their first digit). A leaf
//     met on the edge is closed; a block with nodes beside its top cannot
//     grow. RenderNarrative shows a grown block at a size that does not grow
//     with its entries.
//   - Resolve: the tree root is level 0 with path "", tree["0"] is level 1;
//     depth ≤ 0 means 3, as in the original. Generated paths put a dot
//     between every digit ("0.1.2"), which reads the same at any place.
//   - Rendering follows the original executeInstruction/formatBlockContent
//     byte for byte for "_" and digit keys (see RenderSection); keys are in
//     numeric order with "_" first; other node keys follow sorted as
//     "key: value"; an empty "_" is not written. Section headers show the
//     address as written, never a float re-rendering of it.
package pscale
