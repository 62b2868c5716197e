package cli

import (
	"strings"
	"testing"
)

// An argument that names a secret or looks like a generated token is
// warned about; paths, package names, flags and words are not.
func TestLooksSecret(t *testing.T) {
	for arg, want := range map[string]bool{
		"--api-key=abc":                        true,
		"TOKEN=x":                              true,
		"--password":                           true,
		"client_secret":                        true,
		"ghp_R2d4kL9qZx7Vb1Nw8Tc3Ym6Pf0Hs5Ju2": true,
		"--auth=sk4f9a0c3e7b21d5568fe90a7c4b3d2e1": true,
		"-y": false,
		"@modelcontextprotocol/server-everything": false,
		"/home/someone/projects/notes":            false,
		"--allowed-directories=/srv/shared-files": false,
		"server-filesystem-experimental-2025":     false,
		"modelcontextprotocol":                    false,
	} {
		if got := looksSecret(arg); got != want {
			t.Errorf("looksSecret(%q) = %v, want %v (%.2f bits)", arg, got, want, randomBits(arg))
		}
	}
}

// A --env or --header without a name says the name is empty, never
// "--env : write KEY=VALUE"; the value (maybe a secret) is not repeated.
func TestKeyValuesSayWhatIsMissing(t *testing.T) {
	for _, c := range []struct{ in, sep, flag, form, says string }{
		{"=hunter2", "=", "--env", "KEY=VALUE", `--env: the name before "=" is empty; write KEY=VALUE`},
		{"KEY", "=", "--env", "KEY=VALUE", `--env KEY: no "=" in it; write KEY=VALUE`},
		{" : hunter2", ":", "--header", `"Name: value"`, `--header: the name before ":" is empty`},
	} {
		_, err := keyValues([]string{c.in}, c.sep, c.flag, c.form)
		if err == nil || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: %v", c.in, err)
		}
	}
}
