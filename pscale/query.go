package pscale

import (
	"errors"
	"fmt"
	"strings"
)

// Mode is the kind of answer BSP gives.
type Mode string

const (
	ModeBlock   Mode = "block"   // the full tree
	ModeSpindle Mode = "spindle" // the chain from the root to the addressed node
	ModePoint   Mode = "point"   // one node of that chain
	ModeRing    Mode = "ring"    // the addressed node's siblings
	ModeDir     Mode = "dir"     // the addressed node and everything below it
	ModeDisc    Mode = "disc"    // every node at one pscale
	ModeStar    Mode = "star"    // the references under the addressed node's digit 0
)

// Modes lists every mode, in the order the docs teach them.
var Modes = []Mode{ModeBlock, ModeSpindle, ModePoint, ModeRing, ModeDir, ModeDisc, ModeStar}

// ParseMode reads a mode name; case and surrounding space do not matter, and
// "" is the empty Mode (BSP then infers it from what the query holds).
func ParseMode(s string) (Mode, error) {
	m := Mode(strings.ToLower(strings.TrimSpace(s)))
	if m == "" {
		return "", nil
	}
	for _, known := range Modes {
		if m == known {
			return m, nil
		}
	}
	return "", fmt.Errorf("mode %q: want one of %s", s, modeList())
}

func modeList() string {
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return strings.Join(names, ", ")
}

// Query is one BSP read: the mode and what it needs.
//
// With Mode empty, BSP infers it as the reference walker does: nothing is a
// block, an address a spindle, an address and a pscale a point, a pscale
// alone a disc. Ring, dir and star are named. Pscale is the point's pscale,
// the disc's pscale, or how deep dir lists (it is optional there).
type Query struct {
	Mode    Mode
	Address *Address
	Pscale  *int
}

// ParseQuery reads a query as tools and commands receive it: the mode's
// name, the spindle (an address as a string or number) and the point (a
// pscale as a number or numeric string). A nil or blank spindle or point
// is absent. The query's Mode is set (inferred when mode is blank), and a
// query that gives its mode more or less than it reads is refused here,
// so that every fault of the asking is found where the question is read. A spindle ending in "*" asks for star mode, as in the
// reference walker ("0.7*"); a walk after the star is refused with the
// address that reaches it, since here a node's references are its digit 0
// and the walk goes through it ("0.7*1" is 0.7.0.1).
func ParseQuery(mode string, spindle, point any) (Query, error) {
	m, err := ParseMode(mode)
	if err != nil {
		return Query{}, err
	}
	q := Query{Mode: m}
	if s, ok := spindle.(string); ok {
		spindle = strings.TrimSpace(s)
		if pre, post, star := strings.Cut(s, "*"); star {
			pre, post = strings.TrimSpace(pre), strings.TrimSpace(post)
			switch {
			case strings.Contains(post, "*"):
				return Query{}, fmt.Errorf("spindle %q: one * at most, at the end", s)
			case post != "" && pre != "":
				return Query{}, fmt.Errorf("spindle %q: a node's references are the entries at its digit 0, so walk through it: spindle %s.0.%s", s, pre, post)
			case post != "":
				return Query{}, fmt.Errorf("spindle %q: * goes at the end of the address whose references to list, e.g. 0.7*", s)
			}
			if m != "" && m != ModeStar {
				return Query{}, fmt.Errorf("spindle %q: a trailing * asks for star mode, but mode is %s", s, m)
			}
			q.Mode, spindle = ModeStar, pre
		}
	}
	if spindle != nil && spindle != "" {
		a, err := ParseAddress(spindle)
		if err != nil {
			return Query{}, fmt.Errorf("spindle: %w", err)
		}
		q.Address = &a
	}
	if s, ok := point.(string); ok {
		point = strings.TrimSpace(s)
	}
	if point != nil && point != "" {
		p, err := ParsePscale(point)
		if err != nil {
			return Query{}, fmt.Errorf("point: %w", err)
		}
		q.Pscale = &p
	}
	if q.Mode, err = q.resolve(); err != nil {
		return Query{}, err
	}
	return q, nil
}

// resolve infers an empty mode and checks that the query holds what its
// mode needs and nothing it would ignore: a spindle or point that a mode
// does not read is an error, never silently dropped.
func (q Query) resolve() (Mode, error) {
	m := q.Mode
	if m == "" {
		switch {
		case q.Address == nil && q.Pscale == nil:
			m = ModeBlock
		case q.Pscale == nil:
			m = ModeSpindle
		case q.Address == nil:
			m = ModeDisc
		default:
			m = ModePoint
		}
	}
	needsAddress := m != ModeBlock && m != ModeDisc
	switch {
	case m == ModeBlock && q.Address != nil:
		return m, errors.New("block mode reads the whole tree: leave the spindle out (dir lists a node and everything below it)")
	case m == ModeBlock && q.Pscale != nil:
		return m, errors.New("block mode takes no point (disc lists every node at one pscale)")
	case m == ModeDisc && q.Pscale == nil:
		return m, errors.New("disc mode needs a point: the pscale whose nodes to list, e.g. -1")
	case m == ModeDisc && q.Address != nil:
		return m, errors.New("disc mode reads the whole block: leave the spindle out (dir with a point lists the nodes under one node, down to that pscale)")
	case needsAddress && q.Address == nil:
		return m, fmt.Errorf(`%s mode needs a spindle: an address such as "0.12"`, m)
	case m == ModePoint && q.Pscale == nil:
		return m, errors.New("point mode needs a point: the pscale of the node to pick from the chain, e.g. -1")
	case q.Pscale != nil && (m == ModeSpindle || m == ModeRing || m == ModeStar):
		return m, fmt.Errorf("%s mode takes no point (%s)", m, pointHint[m])
	}
	return m, nil
}

var pointHint = map[Mode]string{
	ModeSpindle: "point mode picks one node of the chain; dir lists the nodes below it down to a pscale",
	ModeRing:    "ring lists the siblings of one node; disc lists every node at a pscale",
	ModeStar:    "star lists the references at a node; dir on its digit 0 with a point lists deeper",
}
