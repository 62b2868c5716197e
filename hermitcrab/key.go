package hermitcrab

import (
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
