package hermitcrab

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmkernels/kernels/internal/atomicfile"
)

// keyFile holds the API key given through the web page or `hermitcrab key
// set`, in the data directory, readable by its owner only. The key is never
// written anywhere else: not to the store, a log or a page.
const keyFile = "api_key"

// StoredKey returns the API key kept in the data directory, "" when none.
func (k *Kernel) StoredKey() (string, error) {
	data, err := os.ReadFile(filepath.Join(k.dir, keyFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the stored API key: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// SetKey keeps key in the data directory (mode 0600, replaced atomically),
// replacing any key kept before.
func (k *Kernel) SetKey(key string) error {
	key = strings.TrimSpace(key)
	if key == "" || strings.ContainsAny(key, " \t\r\n") {
		return errors.New("the key is empty or has spaces in it: paste the whole key")
	}
	if err := atomicfile.Write(filepath.Join(k.dir, keyFile), []byte(key+"\n"), 0o600); err != nil {
		return fmt.Errorf("storing the API key: %w", err)
	}
	return nil
}

// ClearKey removes the stored key; it reports whether there was one.
func (k *Kernel) ClearKey() (bool, error) {
	err := os.Remove(filepath.Join(k.dir, keyFile))
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
func (k *Kernel) WebhookSecret() (string, error) { return k.localSecret(webhookSecretFile) }

// MCPToken is the bearer token of the instance's MCP endpoint.
func (k *Kernel) MCPToken() (string, error) { return k.localSecret(mcpTokenFile) }

// SecretPath is where a secret of WebhookSecret or MCPToken is kept.
func (k *Kernel) SecretPath(webhook bool) string {
	if webhook {
		return filepath.Join(k.dir, webhookSecretFile)
	}
	return filepath.Join(k.dir, mcpTokenFile)
}

// localSecret reads the secret kept in the data directory under name,
// making a random one (256 bits, hex) on first use under a file lock, so
// two processes starting at once agree on it. A secret already made is
// read without taking the lock, so a read-only data directory serves it
// (wake hooks). A file others can read is refused, as ssh refuses such a
// key.
func (k *Kernel) localSecret(name string) (string, error) {
	path := filepath.Join(k.dir, name)
	if s, err := readSecret(path); s != "" || err != nil {
		return s, err
	}
	if err := os.MkdirAll(k.dir, 0o700); err != nil {
		return "", fmt.Errorf("data directory %s: %w", k.dir, err)
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
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s can be read by others (mode %v): chmod 600 %s", path, st.Mode().Perm(), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(data)), nil
}
