package identity

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/llmkernels/kernels/internal/clip"
)

// Domain starts the signed bytes of every envelope, so a signature made for
// something else (another program, another version of this format) never
// verifies as an envelope, and the kind inside it keeps a signed mark from
// passing as a message.
const Domain = "hermitcrab-envelope-v1"

// TimeFormat is how Sign writes times: UTC with milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// Envelope is a signed statement: Agent says Body, of Kind, at Time, once
// (Nonce). Sig is the ed25519 signature, by the key Agent encodes, over
// SignedBytes.
type Envelope struct {
	Kind  string          `json:"kind"`
	Agent string          `json:"agent"`
	Time  string          `json:"time"`
	Nonce string          `json:"nonce"`
	Body  json.RawMessage `json:"body"`
	Sig   string          `json:"sig"`
}

var (
	kindPattern  = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
	noncePattern = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

// Sign makes an envelope of kind with body (any value encoding/json
// accepts; it is stored in canonical form), the current time and a fresh
// 128-bit nonce.
func (id *Identity) Sign(kind string, body any, now time.Time) (*Envelope, error) {
	if !kindPattern.MatchString(kind) {
		return nil, fmt.Errorf("sign: kind %q is not 1-32 of [a-z0-9_] starting with a letter", clip.Text(kind, 80))
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("sign %s: body: %w", kind, err)
	}
	canon, err := Canonical(raw)
	if err != nil {
		return nil, fmt.Errorf("sign %s: body: %w", kind, err)
	}
	nonce := make([]byte, 16)
	if _, err := io.ReadFull(rand.Reader, nonce); err != nil {
		return nil, fmt.Errorf("sign %s: nonce: %w", kind, err)
	}
	e := &Envelope{Kind: kind, Agent: id.agent, Time: now.UTC().Format(TimeFormat), Nonce: hex.EncodeToString(nonce), Body: canon}
	msg, err := e.SignedBytes()
	if err != nil {
		return nil, fmt.Errorf("sign %s: %w", kind, err)
	}
	e.Sig = base64.RawURLEncoding.EncodeToString(ed25519.Sign(id.priv, msg))
	return e, nil
}

// SignedBytes is what the signature covers: netstrings (len ":" bytes ",")
// of Domain, Kind, Agent, Time, Nonce and the canonical JSON of Body, one
// after the other. Field boundaries are explicit, so no two different
// envelopes share signed bytes.
func (e *Envelope) SignedBytes() ([]byte, error) {
	body, err := Canonical(e.Body)
	if err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	var b bytes.Buffer
	for _, f := range [][]byte{[]byte(Domain), []byte(e.Kind), []byte(e.Agent), []byte(e.Time), []byte(e.Nonce), body} {
		b.WriteString(strconv.Itoa(len(f)))
		b.WriteByte(':')
		b.Write(f)
		b.WriteByte(',')
	}
	return b.Bytes(), nil
}

// Refusal is why an envelope was not accepted. Reason is one of the
// Reason* constants, for programs; Detail says it for people.
type Refusal struct {
	Reason string
	Detail string
}

// Reasons an envelope is refused.
const (
	ReasonMalformed = "malformed"     // a field is missing or not in its form
	ReasonBadAgent  = "bad_agent"     // Agent is not an agent id
	ReasonSignature = "bad_signature" // the signature is not Agent's over this envelope
	ReasonKind      = "wrong_kind"    // a valid envelope of another kind
	ReasonStale     = "stale"         // Time is outside the accepted window
	ReasonReplay    = "replayed"      // this agent already used this nonce
)

func (r *Refusal) Error() string { return "refused (" + r.Reason + "): " + r.Detail }

func refuse(reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// AsRefusal finds a Refusal in err's chain.
func AsRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	ok := errors.As(err, &r)
	return r, ok
}

// Verify checks that e is a well-formed envelope of kind signed by the key
// its Agent names, and returns its time. It does not judge the time or the
// nonce; see CheckTime and the beach's nonce store. Every failure is a
// *Refusal.
func (e *Envelope) Verify(kind string) (time.Time, error) {
	if e == nil {
		return time.Time{}, refuse(ReasonMalformed, "no envelope")
	}
	if !kindPattern.MatchString(e.Kind) {
		return time.Time{}, refuse(ReasonMalformed, "kind %q is not 1-32 of [a-z0-9_] starting with a letter", clip.Text(e.Kind, 80))
	}
	pub, err := ParseAgent(e.Agent)
	if err != nil {
		return time.Time{}, refuse(ReasonBadAgent, "%v", err)
	}
	t, err := time.Parse(time.RFC3339Nano, e.Time)
	if err != nil {
		return time.Time{}, refuse(ReasonMalformed, "time %q is not an RFC 3339 time", clip.Text(e.Time, 80))
	}
	if !noncePattern.MatchString(e.Nonce) {
		return time.Time{}, refuse(ReasonMalformed, "nonce %q is not 32 lower-case hex digits", clip.Text(e.Nonce, 80))
	}
	// Re-encoding and comparing gives a signature one spelling (decoders
	// skip line breaks and ignore the last character's spare bits).
	sig, err := base64.RawURLEncoding.DecodeString(e.Sig)
	if err != nil || len(sig) != ed25519.SignatureSize || base64.RawURLEncoding.EncodeToString(sig) != e.Sig {
		return time.Time{}, refuse(ReasonMalformed, "sig is not a base64url (unpadded) ed25519 signature")
	}
	if smallOrder(sig[:32]) { // R: libsodium refuses it, crypto/ed25519 does not (see smallOrderY)
		return time.Time{}, refuse(ReasonSignature, "the signature on this %s has a point of small order for R, which no honest signer makes", clip.Text(e.Kind, 80))
	}
	msg, err := e.SignedBytes()
	if err != nil {
		return time.Time{}, refuse(ReasonMalformed, "%v", err)
	}
	if !ed25519.Verify(pub, msg, sig) {
		return time.Time{}, refuse(ReasonSignature, "the signature on this %s is not by %s's key (forged, altered, or signed by another key)", clip.Text(e.Kind, 80), e.Agent)
	}
	// The kind is checked after the signature so that a valid envelope of
	// the wrong kind says so, instead of looking like a forgery.
	if e.Kind != kind {
		return time.Time{}, refuse(ReasonKind, "a signed %s where a %s was expected", e.Kind, kind)
	}
	return t, nil
}

// CheckTime refuses a signed time more than window away from now, in
// either direction (clock skew is allowed for, replays of old envelopes are
// not).
func CheckTime(t, now time.Time, window time.Duration) error {
	if d := now.Sub(t); d > window || d < -window {
		return refuse(ReasonStale, "signed at %s, %s from this clock's %s; accepted: within %s", t.UTC().Format(TimeFormat), d.Round(time.Second), now.UTC().Format(TimeFormat), window)
	}
	return nil
}

// Canonical rewrites JSON in the canonical form RFC 8785 (JCS) gives it for
// the values envelopes use: object members sorted by their keys' UTF-16
// code units, no insignificant space, strings escaped minimally (only ",
// \ and control characters). Numbers must be integers within ±2^53 (JCS
// and JSON agree on those); other numbers, duplicate keys, invalid UTF-8,
// escaped lone surrogates and trailing data are errors, so that no two
// parsers can read one signed body two ways.
func Canonical(raw []byte) ([]byte, error) { return canonical(raw, 0) }

// canonical is Canonical for a value found at depth (-1: the envelope
// around a body, so the body keeps Canonical's depth limit).
func canonical(raw []byte, depth int) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if !utf8.Valid(raw) {
		return nil, errors.New("JSON is not valid UTF-8")
	}
	if err := checkSurrogates(raw); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := canonValue(dec, &out, depth); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return out.Bytes(), nil
}

const maxDepth = 32

// checkSurrogates refuses a \u escape of a lone UTF-16 surrogate, as RFC
// 8785 (3.2.2.2) requires: encoding/json reads one as U+FFFD, other readers
// keep it, so two bodies that different readers read apart would share a
// signature. raw is scanned as JSON text; the decoder judges the rest.
func checkSurrogates(raw []byte) error {
	inString := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			inString = !inString
		case c == '\\' && inString && i+1 < len(raw):
			i++
			if raw[i] != 'u' {
				continue
			}
			r, ok := hex4(raw, i+1)
			switch {
			case !ok:
				continue // malformed: the decoder says so
			case r >= 0xd800 && r < 0xdc00:
				if lo, ok := hex4(raw, i+7); ok && i+6 < len(raw) && raw[i+5] == '\\' && raw[i+6] == 'u' && lo >= 0xdc00 && lo < 0xe000 {
					i += 10 // the pair
					continue
				}
				return fmt.Errorf("JSON string escapes a lone surrogate (\\u%04x): not Unicode text", r)
			case r >= 0xdc00 && r < 0xe000:
				return fmt.Errorf("JSON string escapes a lone surrogate (\\u%04x): not Unicode text", r)
			}
			i += 4
		}
	}
	return nil
}

// hex4 reads four hex digits at raw[i:].
func hex4(raw []byte, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(raw[i:i+4]), 16, 16)
	return rune(n), err == nil
}

func canonValue(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("JSON nested deeper than %d", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("JSON: %w", err)
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			type member struct {
				key string
				val []byte
			}
			var members []member
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return fmt.Errorf("JSON: %w", err)
				}
				key := kt.(string)
				if seen[key] {
					return fmt.Errorf("JSON object has the key %q twice", clip.Text(key, 80))
				}
				seen[key] = true
				var val bytes.Buffer
				if err := canonValue(dec, &val, depth+1); err != nil {
					return err
				}
				members = append(members, member{key, val.Bytes()})
			}
			if _, err := dec.Token(); err != nil {
				return fmt.Errorf("JSON: %w", err)
			}
			slices.SortFunc(members, func(a, b member) int {
				return slices.Compare(utf16.Encode([]rune(a.key)), utf16.Encode([]rune(b.key)))
			})
			out.WriteByte('{')
			for i, m := range members {
				if i > 0 {
					out.WriteByte(',')
				}
				canonString(out, m.key)
				out.WriteByte(':')
				out.Write(m.val)
			}
			out.WriteByte('}')
		case '[':
			out.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					out.WriteByte(',')
				}
				if err := canonValue(dec, out, depth+1); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return fmt.Errorf("JSON: %w", err)
			}
			out.WriteByte(']')
		}
	case string:
		canonString(out, v)
	case json.Number:
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || n > 1<<53 || n < -(1<<53) {
			return fmt.Errorf("JSON number %s: only integers within ±2^53 are allowed in signed bodies (send others as strings)", clip.Text(string(v), 80))
		}
		out.WriteString(strconv.FormatInt(n, 10))
	case bool:
		out.WriteString(strconv.FormatBool(v))
	case nil:
		out.WriteString("null")
	}
	return nil
}

// canonString writes s as RFC 8785 does: only the quote, the backslash and
// control characters are escaped.
func canonString(out *bytes.Buffer, s string) {
	const hexDigits = "0123456789abcdef"
	out.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			out.WriteString(`\"`)
		case c == '\\':
			out.WriteString(`\\`)
		case c == '\b':
			out.WriteString(`\b`)
		case c == '\f':
			out.WriteString(`\f`)
		case c == '\n':
			out.WriteString(`\n`)
		case c == '\r':
			out.WriteString(`\r`)
		case c == '\t':
			out.WriteString(`\t`)
		case c < 0x20:
			out.WriteString(`\u00`)
			out.WriteByte(hexDigits[c>>4])
			out.WriteByte(hexDigits[c&0xf])
		default:
			out.WriteByte(c)
		}
	}
	out.WriteByte('"')
}

// Decode decodes an envelope's body into v, refusing fields v does not
// have, so a body is read exactly as it was signed (see decodeStrict).
func (e *Envelope) Decode(v any) error {
	if err := decodeStrict(e.Body, v, 0); err != nil {
		return refuse(ReasonMalformed, "%s body: %v", e.Kind, err)
	}
	return nil
}

// DecodeEnvelope reads a signed envelope from JSON into v: an *Envelope,
// or a pointer to a struct that embeds Envelope beside further fields (an
// MCP tool's arguments, with its limit). Every route that takes an
// envelope reads it here, so no route reads one that another refuses:
// the whole text, body included, is held to Canonical's rules (duplicate
// keys, invalid UTF-8, escaped lone surrogates, numbers that are not
// integers within ±2^53 and trailing data are refused), and the keys must
// be v's fields' JSON names exactly. A failure is a malformed *Refusal.
func DecodeEnvelope(raw []byte, v any) error {
	if err := decodeStrict(raw, v, -1); err != nil {
		return refuse(ReasonMalformed, "not a signed envelope {kind, agent, time, nonce, body, sig}: %v", err)
	}
	return nil
}

// decodeStrict decodes the JSON raw, found at depth, into v, after the
// checks of Canonical, refusing keys that are not v's fields' JSON names
// exactly: encoding/json alone would also take "TO" or "To" for "to",
// which other JSON readers do not.
func decodeStrict(raw []byte, v any, depth int) error {
	if _, err := canonical(raw, depth); err != nil {
		return err
	}
	if err := exactKeys(raw, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// exactKeys checks that the keys of the JSON object body are JSON names of
// the fields of the struct v points to, spelled exactly. It checks nothing
// when v is not a pointer to a struct, or body is not an object (Decode's
// decoder says why).
func exactKeys(body []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) != nil {
		return nil
	}
	names := map[string]bool{}
	fieldNames(t.Elem(), names)
	for key := range members {
		if !names[key] {
			return fmt.Errorf("unknown field %q", clip.Text(key, 80))
		}
	}
	return nil
}

// fieldNames adds the JSON names of struct type t's fields to names, with
// those of an embedded struct without a name of its own, as encoding/json
// reads them.
func fieldNames(t reflect.Type, names map[string]bool) {
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			fieldNames(f.Type, names)
		case !f.IsExported():
		case name == "":
			names[f.Name] = true
		default:
			names[name] = true
		}
	}
}
