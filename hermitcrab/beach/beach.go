// Package beach is the protocol hermitcrab instances use to find and talk
// to each other: signed passports, marks and messages, encrypted save
// points, and the Client an instance uses to reach a beach server
// (package beach/server, which keeps them in package beach/store).
//
// Every write is an identity.Envelope signed by the writer's key; there are
// no accounts and no tokens. The kinds and their bodies:
//
//	passport       Passport   who the agent is, what it offers and needs (pscale coordinates)
//	mark           Mark       "I was at this URL, for this purpose" (the URL as a hash)
//	message        Message    a grain probe, grain response or general message to another agent
//	inbox_check    InboxCheck "give me my unread messages" (and mark them read)
//	savepoint      SavePoint  an encrypted export of the agent's blocks
//	savepoint_get  Audience   "give me my save point"
//
// Open checks an envelope (signature, kind, body fields and limits) and
// decodes its body; the beach and every receiving Client call it, so a
// client never trusts the beach's word for who said what. Passports, marks
// and messages are public statements: one signed for beach A also verifies
// on beach B. The two private reads carry the beach's host name in their
// body (Audience), and a beach refuses one addressed to another host, so a
// beach that collects an instance's signed read cannot replay it elsewhere.
//
// Messages are signed, not encrypted: the beach's operator can read them.
// Save points are encrypted (see savepoint.go).
package beach

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/llmkernels/kernels/hermitcrab/identity"
	"github.com/llmkernels/kernels/internal/clip"
)

// Envelope kinds.
const (
	KindPassport     = "passport"
	KindMark         = "mark"
	KindMessage      = "message"
	KindInboxCheck   = "inbox_check"
	KindSavePoint    = "savepoint"
	KindSavePointGet = "savepoint_get"
)

// Message types.
const (
	TypeGrainProbe    = "grain_probe"
	TypeGrainResponse = "grain_response"
	TypeGeneral       = "general"
)

// Limits on bodies, in characters (runes) unless said otherwise.
const (
	MaxName        = 100
	MaxDescription = 2000
	MaxCoordinates = 32  // offers, needs
	MaxCoordinate  = 200 // one offer or need
	MaxPurpose     = 500
	MaxContent     = 16 << 10
	MaxSpindle     = 500
	MaxSavePoint   = 8 << 20 // bytes of ciphertext
)

// Passport is who an agent is: a name, a description, and what it offers
// and needs as pscale coordinates (e.g. "0.23", or "purpose 0.4").
type Passport struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Offers      []string `json:"offers,omitempty"`
	Needs       []string `json:"needs,omitempty"`
}

// Mark says the agent visited a URL and why. The URL itself is not sent:
// URLHash is URLHash(url), so only someone who knows a URL can find its
// marks.
type Mark struct {
	URLHash string `json:"url_hash"`
	Purpose string `json:"purpose,omitempty"`
}

// Message is one message to another agent.
type Message struct {
	To      string `json:"to"`
	Type    string `json:"type"` // grain_probe | grain_response | general
	Content string `json:"content"`
	// Spindle is an optional pscale spindle from the sender's blocks that
	// the message is about (e.g. "purpose 0.23").
	Spindle string `json:"spindle,omitempty"`
	// RespondingTo is the nonce of the message this one answers.
	RespondingTo string `json:"responding_to,omitempty"`
}

// Audience is the body of a private read: the host (host[:port]) of the
// beach it is meant for.
type Audience struct {
	Beach string `json:"beach"`
}

// InboxCheck asks for the signer's messages. Without After: the unread
// ones, which are then marked read. With After: every message with an id
// above it, read or not, so an instance whose answer was lost on the way
// (the beach had already marked those messages read) can fetch them again
// from the last id it processed; the receiver's nonce check refuses any
// it had in fact already accepted.
type InboxCheck struct {
	Beach string `json:"beach"`
	After *int64 `json:"after,omitempty"`
}

// Audience returns the beach the check is meant for.
func (c *InboxCheck) Audience() string { return c.Beach }

// Audience returns the beach the read is meant for.
func (a *Audience) Audience() string { return a.Beach }

// URLHash is how marks name a URL: the first 16 hex digits of the SHA-256
// of the URL trimmed of spaces and lower-cased (as the original pscale
// server did, so both hash a URL alike).
func URLHash(url string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(url))))
	return hex.EncodeToString(sum[:8])
}

// ValidURLHash reports whether s has URLHash's form.
func ValidURLHash(s string) bool {
	return len(s) == 16 && strings.Trim(s, "0123456789abcdef") == ""
}

// Body is the set of envelope bodies Open decodes and checks.
type Body interface {
	Passport | Mark | Message | Audience | InboxCheck | SavePoint
}

// Open verifies an envelope of kind and decodes its body into a T, checking
// the body's fields. Every failure is an *identity.Refusal.
func Open[T Body](e *identity.Envelope, kind string) (*T, time.Time, error) {
	t, err := e.Verify(kind)
	if err != nil {
		return nil, time.Time{}, err
	}
	v := new(T)
	if err := e.Decode(v); err != nil {
		return nil, time.Time{}, err
	}
	if err := validate(any(v)); err != nil {
		return nil, time.Time{}, &identity.Refusal{Reason: identity.ReasonMalformed, Detail: kind + ": " + err.Error()}
	}
	return v, t, nil
}

// Check verifies any envelope by its own kind, as the beach would.
func Check(e *identity.Envelope) error {
	var err error
	switch e.Kind {
	case KindPassport:
		_, _, err = Open[Passport](e, e.Kind)
	case KindMark:
		_, _, err = Open[Mark](e, e.Kind)
	case KindMessage:
		_, _, err = Open[Message](e, e.Kind)
	case KindInboxCheck:
		_, _, err = Open[InboxCheck](e, e.Kind)
	case KindSavePointGet:
		_, _, err = Open[Audience](e, e.Kind)
	case KindSavePoint:
		_, _, err = Open[SavePoint](e, e.Kind)
	default:
		err = &identity.Refusal{Reason: identity.ReasonKind, Detail: fmt.Sprintf("kind %q: a beach takes passport, mark, message, inbox_check, savepoint or savepoint_get", clip.Text(e.Kind, 80))}
	}
	return err
}

func validate(v any) error {
	switch b := v.(type) {
	case *Passport:
		if err := text("name", b.Name, 1, MaxName); err != nil {
			return err
		}
		if err := text("description", b.Description, 0, MaxDescription); err != nil {
			return err
		}
		for field, list := range map[string][]string{"offers": b.Offers, "needs": b.Needs} {
			if len(list) > MaxCoordinates {
				return fmt.Errorf("%s: %d entries, at most %d", field, len(list), MaxCoordinates)
			}
			for i, c := range list {
				if err := text(fmt.Sprintf("%s[%d]", field, i), c, 1, MaxCoordinate); err != nil {
					return err
				}
			}
		}
	case *Mark:
		if !ValidURLHash(b.URLHash) {
			return fmt.Errorf("url_hash %q: want 16 lower-case hex digits (the first 8 bytes of the sha256 of the URL, lower-cased and trimmed)", clip.Text(b.URLHash, 80))
		}
		return text("purpose", b.Purpose, 0, MaxPurpose)
	case *Message:
		if _, err := identity.ParseAgent(b.To); err != nil {
			return fmt.Errorf("to: %w", err)
		}
		if err := CheckType(b.Type); err != nil {
			return err
		}
		if err := text("content", b.Content, 1, MaxContent); err != nil {
			return err
		}
		if err := text("spindle", b.Spindle, 0, MaxSpindle); err != nil {
			return err
		}
		return text("responding_to", b.RespondingTo, 0, 64)
	case *Audience:
		return text("beach", b.Beach, 1, 300)
	case *InboxCheck:
		if b.After != nil && *b.After < 0 {
			return fmt.Errorf("after %d: want a message id (0 or more)", *b.After)
		}
		return text("beach", b.Beach, 1, 300)
	case *SavePoint:
		return b.validate()
	}
	return nil
}

// CheckType says what is wrong with a message type, if anything: it is one
// of grain_probe, grain_response and general.
func CheckType(t string) error {
	switch t {
	case TypeGrainProbe, TypeGrainResponse, TypeGeneral:
		return nil
	}
	return fmt.Errorf("type %q: want grain_probe, grain_response or general", clip.Text(t, 80))
}

func text(field, s string, min, max int) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8", field)
	}
	n := utf8.RuneCountInString(s)
	if n < min {
		return fmt.Errorf("%s is empty", field)
	}
	if n > max {
		return fmt.Errorf("%s has %d characters, at most %d", field, n, max)
	}
	return nil
}
