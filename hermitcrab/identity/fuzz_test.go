package identity

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// canonicalSeeds are JSON texts as bodies arrive: members out of order,
// escapes, surrogate pairs, numbers at the edge of ±2^53, and the forms
// Canonical refuses (a duplicate key, a lone surrogate, a fraction,
// trailing data, invalid UTF-8).
var canonicalSeeds = []string{
	`{"to":"hc…","type":"general","content":"hello"}`,
	`{"b":1,"a":[true,false,null,{"z":"\u00e9","\u20ac":"€"}]}`,
	`{"emoji":"\ud83d\ude00","tab":"a\tb","quote":"\"","slash":"\/"}`,
	`[9007199254740991,-9007199254740991,0,-0]`,
	`{"a":1,"a":2}`,
	`{"s":"\ud800"}`,
	`{"n":1.5}`,
	`{"n":1e3}`,
	`{} {}`,
	"{\"s\":\"\xff\"}",
	`"just a string"`,
}

// Any bytes: Canonical answers without panicking, and what it gives is
// JSON, its own canonical form, and the same value as what it was given.
func FuzzCanonical(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := Canonical(raw)
		if err != nil {
			return
		}
		if !json.Valid(c) {
			t.Fatalf("%q gave %q, not JSON", raw, c)
		}
		again, err := Canonical(c)
		if err != nil || !bytes.Equal(again, c) {
			t.Fatalf("%q gave %q, whose canonical form is %q (%v)", raw, c, again, err)
		}
		if in, out := decodeAny(t, raw), decodeAny(t, c); !reflect.DeepEqual(in, out) {
			t.Fatalf("%q reads as %#v, its canonical form %q as %#v", raw, in, c, out)
		}
	})
}

// decodeAny reads JSON as encoding/json does; numbers are float64, exact
// for the integers Canonical takes (and -0 is 0).
func decodeAny(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	return v
}

// Any bytes: DecodeEnvelope refuses with a malformed refusal or reads an
// envelope, and one it reads verifies only when it is the envelope signed
// (a change to its text that still decodes breaks the signature).
func FuzzDecodeEnvelope(f *testing.F) {
	id, err := fromSeed(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		f.Fatal(err)
	}
	signed, err := id.Sign("message", map[string]string{"to": id.Agent(), "type": "general", "content": "hello \u202e"}, time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC))
	if err != nil {
		f.Fatal(err)
	}
	good, _ := json.Marshal(signed)
	f.Add(good)
	f.Add(bytes.Replace(good, []byte(`"kind"`), []byte(`"Kind"`), 1))
	f.Add(bytes.Replace(good, []byte(`hello`), []byte(`hullo`), 1))
	f.Add(append(bytes.TrimSuffix(good, []byte("}")), []byte(`,"kind":"mark"}`)...))
	f.Add([]byte(`{"kind":"message","agent":"hc","time":"","nonce":"","body":{},"sig":""}`))
	f.Add([]byte(`{"kind":"message","body":{"s":"\udc00"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var e Envelope
		if err := DecodeEnvelope(raw, &e); err != nil {
			if r, ok := AsRefusal(err); !ok || r.Reason != ReasonMalformed {
				t.Fatalf("%q: %v is not a malformed refusal", raw, err)
			}
			return
		}
		if _, err := e.Verify(e.Kind); err != nil {
			if _, ok := AsRefusal(err); !ok {
				t.Fatalf("%q: %v is not a refusal", raw, err)
			}
			return
		}
		// It verified: the signed bytes are the ones signed.
		want, _ := signed.SignedBytes()
		got, err := e.SignedBytes()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%q verified with signed bytes %q, the signature was made over %q", raw, got, want)
		}
	})
}

// Any bytes Canonical accepts, the RFC 8785 implementation of the Go
// team's jsontext (the staging of encoding/json/v2) accepts too and writes
// byte for byte as Canonical does. It is a cross-check, not a replacement:
// jsontext accepts fractions, numbers past 2^53 and deep nesting, which
// signed bodies refuse.
func FuzzCanonicalMatchesJCS(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"\u007f":"\u2028","aa":{"\ue000":1,"\ud83d\ude00":2,"":[]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := Canonical(raw)
		if err != nil {
			return
		}
		v := jsontext.Value(bytes.Clone(raw))
		if err := v.Canonicalize(); err != nil || !bytes.Equal(v, c) {
			t.Fatalf("%q: Canonical gave %q, RFC 8785 (jsontext) %q (%v)", raw, c, v, err)
		}
	})
}
