// Package identity gives a hermitcrab instance a key of its own and lets
// anyone check what it signed.
//
// Each instance has an ed25519 key pair, made on first use (Load) and kept
// in its data directory as identity.key: PKCS#8 PEM, mode 0600, written
// atomically under a file lock so two processes starting together end up
// with one key. A key file that group or others can read is refused, as ssh
// does, with the chmod that fixes it. The private key never leaves the
// instance: nothing in this package sends, logs or prints it.
//
// The agent id is the public key itself, so a signature can be checked from
// the id alone, with no key directory to trust:
//
//	agent id = "hc" + base32(public key), RFC 4648 alphabet, lower case, no padding
//
// 54 characters in all.
// ParseAgent accepts only that exact form (it re-encodes and compares), so
// one key has exactly one id.
//
// Signed statements travel as an Envelope (see envelope.go): a kind, the
// signer, a time, a nonce, a JSON body, and an ed25519 signature over a
// canonical encoding of all five with a domain prefix.
package identity

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base32"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmkernels/kernels/internal/atomicfile"
	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/internal/privatefile"
)

// KeyFile is the key's file name inside the data directory.
const KeyFile = "identity.key"

// agentPrefix starts every agent id.
const agentPrefix = "hc"

var agentEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Identity is an instance's key pair. Its zero value is not usable; get one
// from Load or Generate.
type Identity struct {
	priv  ed25519.PrivateKey
	agent string
}

// Generate makes a new random identity (not saved anywhere).
func Generate() (*Identity, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating an ed25519 key: %w", err)
	}
	return fromPrivate(priv), nil
}

// fromSeed makes the identity of a 32-byte ed25519 seed.
func fromSeed(seed []byte) (*Identity, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("ed25519 seed of %d bytes: want %d", len(seed), ed25519.SeedSize)
	}
	return fromPrivate(ed25519.NewKeyFromSeed(seed)), nil
}

func fromPrivate(priv ed25519.PrivateKey) *Identity {
	return &Identity{priv: priv, agent: AgentID(priv.Public().(ed25519.PublicKey))}
}

// Agent is the agent id (derived from the public key).
func (id *Identity) Agent() string { return id.agent }

// Public is the public key.
func (id *Identity) Public() ed25519.PublicKey { return id.priv.Public().(ed25519.PublicKey) }

// Seed is the private key's 32-byte seed. Only key derivation inside the
// instance uses it (the save point's encryption key); never send it.
func (id *Identity) Seed() []byte { return id.priv.Seed() }

// String shows the agent id only, so printing an Identity by mistake never
// prints the key.
func (id *Identity) String() string { return id.agent }

// AgentID encodes a public key as an agent id.
func AgentID(pub ed25519.PublicKey) string {
	return agentPrefix + agentEncoding.EncodeToString(pub)
}

// ParseAgent returns the public key an agent id encodes, or an error saying
// why the text is not an agent id.
func ParseAgent(agent string) (ed25519.PublicKey, error) {
	rest, ok := strings.CutPrefix(agent, agentPrefix)
	if !ok {
		return nil, fmt.Errorf("agent id %q: does not start with %q", clip.Text(agent, 80), agentPrefix)
	}
	raw, err := agentEncoding.DecodeString(rest)
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("agent id %q: not %q followed by the 52-character base32 of an ed25519 public key", clip.Text(agent, 80), agentPrefix)
	}
	pub := ed25519.PublicKey(raw)
	if AgentID(pub) != agent { // non-canonical trailing bits
		return nil, fmt.Errorf("agent id %q: not in canonical form (did you mean %s?)", clip.Text(agent, 80), AgentID(pub))
	}
	switch {
	case !canonicalPoint(raw):
		return nil, fmt.Errorf("agent id %q: its key is a non-canonical encoding of a curve point (a second name for another key)", clip.Text(agent, 80))
	case smallOrder(raw):
		return nil, fmt.Errorf("agent id %q: its key is a point of small order, for which anyone can make a signature that verifies without a private key", clip.Text(agent, 80))
	}
	return pub, nil
}

// The checks libsodium's crypto_sign_verify_detached makes that Go's
// crypto/ed25519 does not. A public key A of small order (one of the
// eight points P with [8]P the identity) lets anyone sign as it without
// a key: with S = 0 and R the identity, [S]B = R + [k]A holds whenever
// the hash k is a multiple of A's order, one message in eight at worst.
// The same goes for a signature whose R is of small order. A key encoded
// with y >= p is a second spelling of a key that has a canonical one.

// smallOrderY are the y coordinates of the points of small order, as
// libsodium's ge25519_has_small_order lists them: 0 (order 4), 1 (order 1),
// the two of order 8, p-1 (order 2), and p and p+1 (non-canonical 0 and 1).
// They are compared without the sign bit (x's sign), which covers all 14
// encodings of the eight points.
var smallOrderY = [7][32]byte{
	{},
	{0x01},
	{0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0,
		0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05},
	{0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f,
		0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a},
	fieldNear(0xec), // p-1
	fieldNear(0xed), // p
	fieldNear(0xee), // p+1
}

// fieldNear is the little-endian encoding of 2^255 - 256 + low: p-1, p and
// p+1 for low 0xec, 0xed and 0xee (p = 2^255 - 19).
func fieldNear(low byte) [32]byte {
	var b [32]byte
	for i := range b {
		b[i] = 0xff
	}
	b[0], b[31] = low, 0x7f
	return b
}

// smallOrder reports whether the 32-byte point encoding p is one of a
// point of small order (libsodium's ge25519_has_small_order).
func smallOrder(p []byte) bool {
	y := [32]byte(p)
	y[31] &= 0x7f
	for _, s := range smallOrderY {
		if y == s {
			return true
		}
	}
	return false
}

// canonicalPoint reports whether the point encoding p has its y coordinate
// below p = 2^255 - 19 (libsodium's ge25519_is_canonical): y >= p spells
// y - p a second way.
func canonicalPoint(p []byte) bool {
	y := [32]byte(p)
	y[31] &= 0x7f
	atLeastP := y[0] >= 0xed && y[31] == 0x7f
	for _, c := range y[1:31] {
		atLeastP = atLeastP && c == 0xff
	}
	return !atLeastP
}

// Load reads the identity kept in dir, making and saving a new one on first
// use. The key file is written 0600; one that group or others can read is
// refused.
func Load(dir string) (*Identity, error) {
	path := filepath.Join(dir, KeyFile)
	if id, err := Read(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("identity: data directory %s: %w", dir, err)
	}
	// Two processes making the first key at once: the lock makes the second
	// read the first one's key instead of replacing it.
	unlock, err := atomicfile.Lock(path + ".lock")
	if err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	defer unlock()
	if id, err := Read(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	id, err := Generate()
	if err != nil {
		return nil, err
	}
	if err := id.Save(path); err != nil {
		return nil, err
	}
	return id, nil
}

// Read reads a key file written by Save. A missing file wraps fs.ErrNotExist.
func Read(path string) (*Identity, error) {
	data, err := privatefile.Read(path) // a key file others can read is refused, naming the chmod
	if err != nil {
		return nil, fmt.Errorf("identity: key file: %w", err)
	}
	blk, _ := pem.Decode(data)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("identity: key file %s: not a PEM \"PRIVATE KEY\" block", path)
	}
	key, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("identity: key file %s: %w", path, err)
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("identity: key file %s holds a %T, want an ed25519 key", path, key)
	}
	return fromPrivate(priv), nil
}

// Save writes the key to path (PKCS#8 PEM, mode 0600) atomically.
func (id *Identity) Save(path string) error {
	der, err := x509.MarshalPKCS8PrivateKey(id.priv)
	if err != nil {
		return fmt.Errorf("identity: encoding the key: %w", err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("identity: %w", err)
	}
	return nil
}
