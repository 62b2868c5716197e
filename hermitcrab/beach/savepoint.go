package beach

import (
	"bytes"
	"compress/gzip"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	"github.com/llmkernels/kernels/hermitcrab/identity"
	"github.com/llmkernels/kernels/internal/clip"
)

// SavePointFormat names the save point's encryption scheme.
const SavePointFormat = "hermitcrab-savepoint-v1"

// maxRestored caps what a save point may decompress to; Seal refuses a
// larger export, so no save point is made that could not be opened.
const maxRestored = 64 << 20

// SavePoint is an instance's blocks, sealed so that only its own key opens
// them: the export is gzipped and encrypted with AES-256-GCM under a key
// derived from the instance's private key (HKDF-SHA256, info
// "hermitcrab savepoint v1 aes-256-gcm"), a random 96-bit nonce, and the
// format and agent id as associated data, so a save point moved to another
// agent's name does not open. Ciphertext is base64 (standard, padded) of
// nonce || sealed. The envelope around it is signed like every write.
type SavePoint struct {
	Format     string `json:"format"`
	Ciphertext string `json:"ciphertext"`
}

func savePointAEAD(id *identity.Identity) (cipher.AEAD, error) {
	key, err := hkdf.Key(sha256.New, id.Seed(), nil, "hermitcrab savepoint v1 aes-256-gcm", 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func savePointAD(agent string) []byte { return []byte(SavePointFormat + "\x00" + agent) }

// Seal encrypts an export (the kernel's Export) into a save point.
func Seal(id *identity.Identity, export []byte) (*SavePoint, error) {
	if len(export) > maxRestored {
		return nil, fmt.Errorf("save point: the export is %d bytes; a save point holds at most %d (Open refuses more)", len(export), maxRestored)
	}
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	if _, err := zw.Write(export); err != nil {
		return nil, fmt.Errorf("save point: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("save point: %w", err)
	}
	aead, err := savePointAEAD(id)
	if err != nil {
		return nil, fmt.Errorf("save point: %w", err)
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := io.ReadFull(rand.Reader, nonce); err != nil {
		return nil, fmt.Errorf("save point: %w", err)
	}
	sealed := aead.Seal(nonce, nonce, zipped.Bytes(), savePointAD(id.Agent()))
	sp := &SavePoint{Format: SavePointFormat, Ciphertext: base64.StdEncoding.EncodeToString(sealed)}
	if err := sp.validate(); err != nil {
		return nil, err
	}
	return sp, nil
}

// Open decrypts a save point with the key that sealed it.
func (sp *SavePoint) Open(id *identity.Identity) ([]byte, error) {
	if sp.Format != SavePointFormat {
		return nil, fmt.Errorf("save point format %q: this hermitcrab reads %s", clip.Text(sp.Format, 80), SavePointFormat)
	}
	sealed, err := base64.StdEncoding.DecodeString(sp.Ciphertext)
	if err != nil {
		return nil, fmt.Errorf("save point: ciphertext is not base64: %w", err)
	}
	aead, err := savePointAEAD(id)
	if err != nil {
		return nil, fmt.Errorf("save point: %w", err)
	}
	if len(sealed) < aead.NonceSize()+aead.Overhead() {
		return nil, errors.New("save point: ciphertext too short")
	}
	zipped, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], savePointAD(id.Agent()))
	if err != nil {
		return nil, fmt.Errorf("save point does not open with %s's key (another key, or altered): %w", id.Agent(), err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped))
	if err != nil {
		return nil, fmt.Errorf("save point: %w", err)
	}
	plain, err := io.ReadAll(io.LimitReader(zr, maxRestored+1))
	if err != nil {
		return nil, fmt.Errorf("save point: %w", err)
	}
	if len(plain) > maxRestored {
		return nil, fmt.Errorf("save point: decompresses to over %d bytes", maxRestored)
	}
	return plain, nil
}

func (sp *SavePoint) validate() error {
	if sp.Format != SavePointFormat {
		return fmt.Errorf("format %q: want %s", clip.Text(sp.Format, 80), SavePointFormat)
	}
	if n := base64.StdEncoding.DecodedLen(len(sp.Ciphertext)); n > MaxSavePoint {
		return fmt.Errorf("ciphertext of about %d bytes: at most %d", n, MaxSavePoint)
	}
	if _, err := base64.StdEncoding.DecodeString(sp.Ciphertext); err != nil || sp.Ciphertext == "" {
		return errors.New("ciphertext is not non-empty standard base64")
	}
	return nil
}
