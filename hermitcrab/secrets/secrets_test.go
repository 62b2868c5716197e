package secrets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The environment's key wins over the stored one; without it the stored
// one is used, and without either there is none.
func TestTheEnvironmentsKeyWinsOverTheStoredOne(t *testing.T) {
	d := Dir(t.TempDir())
	t.Setenv(EnvKey, "")
	if key, from, err := d.APIKey(); key != "" || from != "" || err != nil {
		t.Fatalf("no key: %q %q %v", key, from, err)
	}
	if err := d.SetKey(" sk-stored\n"); err != nil {
		t.Fatal(err)
	}
	if key, from, err := d.APIKey(); key != "sk-stored" || from != FromStored || err != nil {
		t.Fatalf("stored: %q %q %v", key, from, err)
	}
	t.Setenv(EnvKey, "sk-env")
	if key, from, err := d.APIKey(); key != "sk-env" || from != FromEnvironment || err != nil {
		t.Fatalf("both: %q %q %v", key, from, err)
	}
	if had, err := d.ClearKey(); !had || err != nil {
		t.Fatal(had, err)
	}
	if _, err := os.Stat(filepath.Join(string(d), keyFile)); !os.IsNotExist(err) {
		t.Fatalf("the key file is still there: %v", err)
	}
	if err := d.SetKey("two words"); err == nil || !strings.Contains(err.Error(), "paste the whole key") {
		t.Fatalf("a key with a space: %v", err)
	}
}

// The webhook secret and the MCP token are made once, 0600, shared by
// processes, and refused (with the chmod that fixes it) when others can
// read them.
func TestLocalSecretsArePrivate(t *testing.T) {
	k := Dir(t.TempDir())
	s1, err := k.WebhookSecret()
	if err != nil || len(s1) != 64 {
		t.Fatalf("secret %q %v", s1, err)
	}
	again := Dir(string(k))
	if s2, _ := again.WebhookSecret(); s2 != s1 {
		t.Fatal("a second process got another secret")
	}
	if tok, _ := k.MCPToken(); tok == s1 || len(tok) != 64 {
		t.Fatalf("the MCP token %q", tok)
	}
	if err := os.Chmod(k.WebhookSecretPath(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := k.WebhookSecret(); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a secret others can read: %v", err)
	}
}

// The stored API key is refused like the other secrets when others can
// read its file, naming the chmod that fixes it; the key SetKey writes is
// 0600 and read back.
func TestAStoredKeyOthersCanReadIsRefused(t *testing.T) {
	t.Setenv(EnvKey, "")
	d := Dir(t.TempDir())
	if err := d.SetKey("sk-ant-good"); err != nil {
		t.Fatal(err)
	}
	if k, from, err := d.APIKey(); k != "sk-ant-good" || from != FromStored || err != nil {
		t.Fatalf("the key written: %q %q %v", k, from, err)
	}
	path := filepath.Join(string(d), keyFile)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	k, _, err := d.APIKey()
	if k != "" || err == nil || !strings.Contains(err.Error(), "chmod 600 "+path) || strings.Contains(err.Error(), "sk-ant-good") {
		t.Fatalf("a 0644 key file: %q %v", k, err)
	}
}

// A key is sent in an HTTP header: one with a control character, a byte
// outside ASCII or the length of a pasted file would fail every call
// (or be refused by the API) long after it was stored, so it is refused
// when it is given, and the key stored before stays.
func TestAKeyThatCannotBeSentIsRefused(t *testing.T) {
	d := Dir(t.TempDir())
	if err := d.SetKey("sk-ant-good"); err != nil {
		t.Fatal(err)
	}
	for name, key := range map[string]string{
		"escape":    "sk-ant-\x1b[31mabc",
		"NUL":       "sk-ant\x00abc",
		"non-ASCII": "sk-ant-é",
		"DEL":       "sk-ant-\x7f",
		"huge":      "sk-ant-" + strings.Repeat("a", 5<<20),
	} {
		err := d.SetKey(key)
		if err == nil {
			t.Errorf("%s: stored", name)
			continue
		}
		if strings.Contains(err.Error(), key) || len(err.Error()) > 200 {
			t.Errorf("%s: the error repeats the key: %.200s", name, err)
		}
	}
	if key, err := d.StoredKey(); key != "sk-ant-good" || err != nil {
		t.Fatalf("the key stored before: %.40q %v", key, err)
	}
}
