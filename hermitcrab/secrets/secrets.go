// Package secrets keeps an instance's secrets in its data directory, each
// readable by its owner only and never sent to a page or written to a log:
// the API key given through the web page or `hermitcrab key set`, the
// secret webhook senders prove they know, and the MCP endpoint's token.
package secrets

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmkernels/kernels/internal/atomicfile"
	"github.com/llmkernels/kernels/internal/privatefile"
)

// Dir is the secrets of the instance whose data directory it names.
type Dir string

// EnvKey is the environment variable whose API key wins over the stored
// one (for the Anthropic provider, the only one that takes a stored key).
const EnvKey = "ANTHROPIC_API_KEY"

// Where the API key in use came from (APIKey).
const (
	FromEnvironment = "environment" // EnvKey
	FromStored      = "stored"      // the data directory's key file
)

// APIKey is the API key the Anthropic provider uses: EnvKey's when it is
// set, else the one stored in the data directory; from says which, "" when
// there is none. This is the one place that decides it.
func (d Dir) APIKey() (key, from string, err error) {
	if k := os.Getenv(EnvKey); k != "" {
		return k, FromEnvironment, nil
	}
	k, err := d.StoredKey()
	if k == "" || err != nil {
		return "", "", err
	}
	return k, FromStored, nil
}

// keyFile holds the API key given through the web page or `hermitcrab key
// set`, in the data directory, readable by its owner only. The key is never
// written anywhere else: not to the store, a log or a page.
const keyFile = "api_key"

// StoredKey returns the API key kept in the data directory, "" when none.
// A key file others can read is refused, naming the chmod that fixes it.
func (d Dir) StoredKey() (string, error) {
	data, err := privatefile.Read(filepath.Join(string(d), keyFile))
	var exposed *privatefile.ExposedError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", nil
	case errors.As(err, &exposed):
		return "", fmt.Errorf("the stored API key: %w", err)
	case err != nil:
		return "", fmt.Errorf("reading the stored API key: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// SetKey keeps key in the data directory (mode 0600, replaced atomically),
// replacing any key kept before.
func (d Dir) SetKey(key string) error {
	key = strings.TrimSpace(key)
	if key == "" || strings.ContainsAny(key, " \t\r\n") {
		return errors.New("the key is empty or has spaces in it: paste the whole key")
	}
	if err := checkKeyText(key); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(string(d), keyFile), []byte(key+"\n"), 0o600); err != nil {
		return fmt.Errorf("storing the API key: %w", err)
	}
	return nil
}

// maxKeyBytes bounds a key: real ones are about a hundred characters; a
// header of megabytes would be refused by the API on every call.
const maxKeyBytes = 1024

// checkKeyText refuses a key that could not be sent as the x-api-key
// header, or not as given: a key is printable ASCII (a control character
// or a byte outside ASCII is a paste gone wrong). The error never repeats
// the key.
func checkKeyText(key string) error {
	if len(key) > maxKeyBytes {
		return fmt.Errorf("the key is %d bytes long; a key is about a hundred characters: paste the key alone", len(key))
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("the key has a character no API key has (byte %d is 0x%02x, a control character or one outside ASCII): paste the key alone", i+1, c)
		}
	}
	return nil
}

// ClearKey removes the stored key; it reports whether there was one.
func (d Dir) ClearKey() (bool, error) {
	err := os.Remove(filepath.Join(string(d), keyFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("removing the stored API key: %w", err)
	}
	return true, nil
}

// Files of the instance's own secrets, each made on first use, readable
// by its owner only, and never sent to a page or written to a log: the
// secret a webhook sender proves it knows, and the token of the MCP
// endpoint over the instance's blocks.
const (
	webhookSecretFile = "webhook_secret"
	mcpTokenFile      = "mcp_token"
)

// WebhookSecret is the secret a POST to /hooks/NAME must carry (as a
// bearer token, or as the key of its HMAC-SHA256 signature).
func (d Dir) WebhookSecret() (string, error) { return d.localSecret(webhookSecretFile) }

// WebhookSecretPath is where WebhookSecret is kept.
func (d Dir) WebhookSecretPath() string { return filepath.Join(string(d), webhookSecretFile) }

// MCPToken is the bearer token of the instance's MCP endpoint.
func (d Dir) MCPToken() (string, error) { return d.localSecret(mcpTokenFile) }

// MCPTokenPath is where MCPToken is kept.
func (d Dir) MCPTokenPath() string { return filepath.Join(string(d), mcpTokenFile) }

// localSecret reads the secret kept in the data directory under name,
// making a random one (256 bits, hex) on first use under a file lock, so
// two processes starting at once agree on it. A secret already made is
// read without taking the lock, so a read-only data directory serves it
// (wake hooks). A file others can read is refused, as ssh refuses such a
// key.
func (d Dir) localSecret(name string) (string, error) {
	dir := string(d)
	path := filepath.Join(dir, name)
	if s, err := readSecret(path); s != "" || err != nil {
		return s, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("data directory %s: %w", dir, err)
	}
	unlock, err := atomicfile.Lock(path + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if s, err := readSecret(path); s != "" || err != nil {
		return s, err // made by another process meanwhile
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	s := hex.EncodeToString(b)
	if err := atomicfile.Write(path, []byte(s+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("storing %s: %w", name, err)
	}
	return s, nil
}

// readSecret reads a secret file: "" when it is missing or empty.
func readSecret(path string) (string, error) {
	data, err := privatefile.Read(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(data)), nil
}
