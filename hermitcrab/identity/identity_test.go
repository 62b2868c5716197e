package identity

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLoadMakesOneKeyOnFirstUseAndKeepsIt0600(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	// Eight processes' worth of first uses at once end up with one key.
	ids := make([]*Identity, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := Load(dir)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = id
		}()
	}
	wg.Wait()
	for _, id := range ids[1:] {
		if id == nil || id.Agent() != ids[0].Agent() {
			t.Fatalf("concurrent first use made different keys: %v vs %v", id, ids[0])
		}
	}
	info, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %04o, want 0600", info.Mode().Perm())
	}
	again, err := Load(dir)
	if err != nil || again.Agent() != ids[0].Agent() {
		t.Fatalf("reload: %v %v", again, err)
	}
	if s := again.String(); !strings.HasPrefix(s, "hc") || len(s) != 54 {
		t.Fatalf("String() = %q, want the 54-character agent id", s)
	}
}

func TestAKeyFileOthersCanReadIsRefused(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, KeyFile)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a 0644 key file: err = %v, want a refusal naming chmod 600", err)
	}
}

func TestAgentIDsAreCanonical(t *testing.T) {
	id, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ParseAgent(id.Agent())
	if err != nil || !pub.Equal(id.Public()) {
		t.Fatalf("round trip: %v", err)
	}
	a := id.Agent()
	// The last character carries one bit of the key and four padding bits;
	// a set padding bit spells the same key a second way, which must fail.
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	twin := a[:len(a)-1] + string(alphabet[strings.IndexByte(alphabet, a[len(a)-1])^1])
	if d, err := agentEncoding.DecodeString(twin[2:]); err != nil || string(d) != string(pub) {
		t.Fatalf("the twin spelling should decode to the same key (%v)", err)
	}
	if _, err := ParseAgent(twin); err == nil {
		t.Fatal("a non-canonical spelling of an agent id was accepted")
	}
	for _, bad := range []string{"", "hc", "xx" + a[2:], a + "a", a[:len(a)-1], strings.ToUpper(a)} {
		if _, err := ParseAgent(bad); err == nil {
			t.Errorf("ParseAgent(%q) accepted", bad)
		}
	}
}

func TestSignedEnvelopesVerifyAndRefuseWithAReason(t *testing.T) {
	alice, _ := Generate()
	mallory, _ := Generate()
	now := time.Now()
	env, err := alice.Sign("message", map[string]any{"to": "b", "content": "hi <there> & \u2028"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Verify("message"); err != nil {
		t.Fatalf("a good envelope: %v", err)
	}
	// Re-encoding the body (other key order, spaces, escapes), as an MCP
	// SDK or a proxy might, keeps the signature valid.
	reordered := *env
	reordered.Body = json.RawMessage(`{ "content" : "hi \u003cthere\u003e \u0026 \u2028", "to":"b" }`)
	if _, err := reordered.Verify("message"); err != nil {
		t.Fatalf("a re-encoded body: %v", err)
	}
	cases := map[string]struct {
		edit   func(e *Envelope)
		kind   string
		reason string
	}{
		"altered body": {func(e *Envelope) { e.Body = json.RawMessage(`{"to":"b","content":"pay me"}`) }, "message", ReasonSignature},
		"signed by another key": {func(e *Envelope) {
			f, _ := mallory.Sign("message", map[string]any{"to": "b", "content": "hi"}, now)
			f.Agent = alice.Agent()
			*e = *f
		}, "message", ReasonSignature},
		"another time":     {func(e *Envelope) { e.Time = now.Add(time.Second).UTC().Format(TimeFormat) }, "message", ReasonSignature},
		"another nonce":    {func(e *Envelope) { e.Nonce = strings.Repeat("0", 32) }, "message", ReasonSignature},
		"wrong kind":       {func(e *Envelope) {}, "passport", ReasonKind},
		"kind relabelled":  {func(e *Envelope) { e.Kind = "mark" }, "mark", ReasonSignature},
		"bad agent":        {func(e *Envelope) { e.Agent = "alice" }, "message", ReasonBadAgent},
		"no signature":     {func(e *Envelope) { e.Sig = "" }, "message", ReasonMalformed},
		"short nonce":      {func(e *Envelope) { e.Nonce = "abc" }, "message", ReasonMalformed},
		"duplicate key":    {func(e *Envelope) { e.Body = json.RawMessage(`{"to":"b","to":"c"}`) }, "message", ReasonMalformed},
		"float in body":    {func(e *Envelope) { e.Body = json.RawMessage(`{"n":1.5}`) }, "message", ReasonMalformed},
		"trailing garbage": {func(e *Envelope) { e.Body = json.RawMessage(`{} {}`) }, "message", ReasonMalformed},
	}
	for name, c := range cases {
		e := *env
		c.edit(&e)
		_, err := e.Verify(c.kind)
		r, ok := AsRefusal(err)
		if !ok || r.Reason != c.reason {
			t.Errorf("%s: err = %v, want reason %s", name, err, c.reason)
		}
	}
}

func TestCheckTimeWindow(t *testing.T) {
	now := time.Now()
	for _, d := range []time.Duration{0, 4 * time.Minute, -4 * time.Minute} {
		if err := CheckTime(now.Add(d), now, 5*time.Minute); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	for _, d := range []time.Duration{6 * time.Minute, -6 * time.Minute, -24 * time.Hour} {
		r, ok := AsRefusal(CheckTime(now.Add(d), now, 5*time.Minute))
		if !ok || r.Reason != ReasonStale {
			t.Errorf("%s off: want a stale refusal, got %v", d, r)
		}
	}
}

func TestCanonicalMatchesRFC8785ForStringsAndKeys(t *testing.T) {
	got, err := Canonical([]byte(`{"b":[1, true,null],"a":"\u00e9\n\u0001<", "\u20ac":{}, "\ud83d\ude00":0}`))
	if err != nil {
		t.Fatal(err)
	}
	// U+20AC sorts after U+1F600 in UTF-16 (0x20ac > 0xd83d is false:
	// 0xd83d > 0x20ac), so the euro sign comes first among the two.
	want := "{\"a\":\"é\\n\\u0001<\",\"b\":[1,true,null],\"€\":{},\"😀\":0}"
	if string(got) != want {
		t.Fatalf("Canonical:\n got %s\nwant %s", got, want)
	}
}

// Decode reads a body exactly as it was signed: encoding/json matches keys
// case-insensitively (and folds "K" and "ſ"), so without an exact check a
// signed {"to":"A","To":"B"} reads as B in Go and as A in every other JSON
// reader, and {"NAME": …} passes as a name.
func TestDecodeTakesOnlyTheExactFieldNames(t *testing.T) {
	type body struct {
		To      string `json:"to"`
		Content string `json:"content,omitempty"`
		Skip    string `json:"-"`
		Untaged string
	}
	alice, _ := Generate()
	for _, raw := range []string{
		`{"to":"a","To":"b"}`,
		`{"TO":"b"}`,
		`{"to":"a","conte\u017Ft":"x"}`, // ſ (U+017F) folds to s
		`{"to":"a","-":"x"}`,
	} {
		e, err := alice.Sign("message", json.RawMessage(raw), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var b body
		err = e.Decode(&b)
		if r, ok := AsRefusal(err); !ok || r.Reason != ReasonMalformed {
			t.Errorf("body %s: decoded as %+v (err %v), want a malformed refusal", raw, b, err)
		}
	}
	e, _ := alice.Sign("message", json.RawMessage(`{"content":"x","to":"a","Untaged":"u"}`), time.Now())
	var b body
	if err := e.Decode(&b); err != nil || b.To != "a" || b.Content != "x" || b.Untaged != "u" {
		t.Fatalf("exact keys: %+v %v", b, err)
	}
}

// Bodies that differ only in how a value is spelled share a signature
// (that is the point of canonical JSON); a lone surrogate escape, which
// Go reads as U+FFFD but other readers keep, must not be one of them.
func TestCanonicalRefusesLoneSurrogates(t *testing.T) {
	for _, raw := range []string{`{"a":"\ud800"}`, `{"a":"x\udc00y"}`, `{"\ud83d":1}`, `["\ud83d\u0041"]`} {
		if got, err := Canonical([]byte(raw)); err == nil {
			t.Errorf("Canonical(%s) = %s, want an error", raw, got)
		}
	}
	for _, raw := range []string{`{"a":"\ud83d\ude00"}`, `{"a":"\uFFFD"}`, `"\\ud800"`} {
		if _, err := Canonical([]byte(raw)); err != nil {
			t.Errorf("Canonical(%s): %v", raw, err)
		}
	}
}

// One signature has one spelling: base64 decoders skip line breaks and
// ignore the last character's spare bits, which would give an envelope
// many spellings that all verify.
func TestASignatureHasOneSpelling(t *testing.T) {
	alice, _ := Generate()
	e, _ := alice.Sign("message", map[string]any{"to": "b"}, time.Now())
	last := e.Sig[len(e.Sig)-1]
	spare := strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", last) ^ 1 // 64 bytes: the last character carries 2 bits and 4 spare
	for name, sig := range map[string]string{
		"line break":      e.Sig[:40] + "\n" + e.Sig[40:],
		"carriage return": e.Sig + "\r",
		"spare bits":      e.Sig[:len(e.Sig)-1] + string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[spare]),
	} {
		f := *e
		f.Sig = sig
		if _, err := f.Verify("message"); err == nil {
			t.Errorf("%s: another spelling of the signature verified", name)
		}
	}
}

// smallOrderEncodings are the 14 encodings of the eight points of small
// order on edwards25519, as the Ed25519 edge-case literature lists them
// (Chalkias et al., "Taming the many EdDSAs"; the C2SP CCTV vectors):
// eight canonical, and six more spelled with x = 0 and the sign bit set,
// or with y = p or p+1.
var smallOrderEncodings = []string{
	"0100000000000000000000000000000000000000000000000000000000000000", // identity, order 1
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // (0, -1), order 2
	"0000000000000000000000000000000000000000000000000000000000000000", // order 4
	"0000000000000000000000000000000000000000000000000000000000000080", // order 4
	"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05", // order 8
	"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85", // order 8
	"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a", // order 8
	"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa", // order 8
	"0100000000000000000000000000000000000000000000000000000000000080", // identity, x = -0
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", // (0, -1), x = -0
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // y = p: order 4
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", // y = p: order 4
	"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // y = p+1: identity
	"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", // y = p+1: identity
}

// An agent id whose key is a point of small order is one anyone can sign
// as: crypto/ed25519 accepts R = identity, S = 0 for every message whose
// hash is a multiple of the point's order. Such ids are refused, and so is
// an envelope "signed" by one, as libsodium refuses them.
func TestSmallOrderAgentIDsAreRefused(t *testing.T) {
	forgedSomething := 0
	for _, h := range smallOrderEncodings {
		pub, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		agent := AgentID(pub)
		if _, err := ParseAgent(agent); err == nil {
			t.Errorf("ParseAgent accepted %s (key %s, of small order)", agent, h)
		}
		// The forgery, without a key: a nonce whose hash kills the point.
		sig := make([]byte, ed25519.SignatureSize)
		sig[0] = 1 // R = the identity, S = 0
		e := &Envelope{Kind: "passport", Agent: agent, Time: time.Now().UTC().Format(TimeFormat), Body: json.RawMessage(`{"name":"anyone"}`),
			Sig: base64.RawURLEncoding.EncodeToString(sig)}
		for i := 0; i < 200; i++ {
			e.Nonce = fmt.Sprintf("%032x", i)
			msg, _ := e.SignedBytes()
			if ed25519.Verify(pub, msg, sig) {
				forgedSomething++
				if _, err := e.Verify("passport"); err == nil {
					t.Errorf("an envelope forged without a key for %s verified", agent)
				} else if r, ok := AsRefusal(err); !ok || r.Reason != ReasonBadAgent {
					t.Errorf("forged envelope for %s: %v, want a bad_agent refusal", agent, err)
				}
				break
			}
		}
	}
	// crypto/ed25519 decodes at least the eight canonical encodings, and
	// takes the forgery for each: the list is what it claims to be.
	t.Logf("crypto/ed25519 took a forgery for %d of the %d encodings", forgedSomething, len(smallOrderEncodings))
	if forgedSomething < 8 {
		t.Fatalf("crypto/ed25519 took a forgery for only %d of the listed points: the list is not of small-order points", forgedSomething)
	}
}

// A key spelled with y >= p (19 values, either sign) is a second name for
// another key, or for no point: refused whatever it decodes to.
func TestNonCanonicalKeysAreRefused(t *testing.T) {
	for low := 0xed; low <= 0xff; low++ {
		for _, top := range []byte{0x7f, 0xff} {
			key := bytes.Repeat([]byte{0xff}, 32)
			key[0], key[31] = byte(low), top
			if _, err := ParseAgent(AgentID(key)); err == nil {
				t.Errorf("ParseAgent accepted the non-canonical key %x", key)
			}
		}
	}
	// p-1 minus one is canonical (and not of small order as a y value; it
	// may be no point at all, which ed25519.Verify then refuses).
	key := bytes.Repeat([]byte{0xff}, 32)
	key[0], key[31] = 0xeb, 0x7f
	if _, err := ParseAgent(AgentID(key)); err != nil {
		t.Errorf("p-2 as y: %v", err)
	}
}

// A signature whose R is of small order is one no honest signer makes;
// libsodium refuses it and crypto/ed25519 does not. The key's owner can
// make one (R = identity, S = k·a), so it is refused here too.
func TestASignatureWithASmallOrderRIsRefused(t *testing.T) {
	alice, _ := Generate()
	e, _ := alice.Sign("message", map[string]any{"to": "b"}, time.Now())
	h := sha512.Sum512(alice.Seed())
	h[0] &= 248
	h[31] &= 127
	h[31] |= 64
	a := new(big.Int).SetBytes(reverse(h[:32]))
	l, _ := new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)
	r := make([]byte, 32)
	r[0] = 1 // the identity
	msg, _ := e.SignedBytes()
	kh := sha512.New()
	kh.Write(r)
	kh.Write(alice.Public())
	kh.Write(msg)
	k := new(big.Int).SetBytes(reverse(kh.Sum(nil)))
	s := new(big.Int).Mul(k, a)
	s.Mod(s, l)
	sig := append(r, reverse(s.FillBytes(make([]byte, 32)))...)
	if !ed25519.Verify(alice.Public(), msg, sig) {
		t.Fatal("the test's signature with R = identity does not verify under crypto/ed25519: the test is wrong")
	}
	e.Sig = base64.RawURLEncoding.EncodeToString(sig)
	if _, err := e.Verify("message"); err == nil {
		t.Fatal("a signature whose R is the identity verified")
	} else if r, ok := AsRefusal(err); !ok || r.Reason != ReasonSignature {
		t.Fatalf("R = identity: %v, want a bad_signature refusal", err)
	}
}

// reverse returns b's bytes in the opposite order (little- to big-endian).
func reverse(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[len(b)-1-i] = c
	}
	return out
}
