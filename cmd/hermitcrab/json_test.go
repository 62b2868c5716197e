package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab"
)

// exitStatus is the exit status of a finished run of the binary.
func exitStatus(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	e, ok := errors.AsType[*exec.ExitError](err)
	if !ok {
		t.Fatal(err)
	}
	return e.ExitCode()
}

// TestWakeHooksJSON pins wake hooks --json: the webhook triggers only,
// with the path a sender posts to, and the secret the text shows; [] when
// there are none.
func TestWakeHooksJSON(t *testing.T) {
	data := withTriggers(t, "webhook ci tier 1: look at the build", "every 6h tier 1: check stash")
	text, _ := mustHC(t, data, "", "wake", "hooks")
	out, _ := mustHC(t, data, "", "wake", "hooks", "--json")
	var doc struct {
		Hooks []struct {
			Name  string `json:"name"`
			Path  string `json:"path"`
			Where string `json:"where"`
			Line  string `json:"line"`
		} `json:"hooks"`
		Secret     string `json:"secret"`
		SecretFile string `json:"secret_file"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Hooks) != 1 {
		t.Fatalf("wake hooks --json: %v\n%s", err, out)
	}
	h := doc.Hooks[0]
	if h.Name != "ci" || h.Path != "/hooks/ci" || h.Where != "wake 0.5.1" || h.Line != "webhook ci tier 1: look at the build" {
		t.Fatalf("the hook: %+v", h)
	}
	// The example posts where the instance listens: serve's default, or
	// the daemon's --addr (before: always 8420, where a daemon on 8422
	// was not).
	if !strings.Contains(text, "http://127.0.0.1:8420/hooks/ci\n") {
		t.Errorf("the example does not post to serve's default address:\n%s", text)
	}
	if daemon, _ := mustHC(t, data, "", "wake", "hooks", "--addr", "127.0.0.1:8422"); !strings.Contains(daemon, "http://127.0.0.1:8422/hooks/ci\n") {
		t.Errorf("the example does not post to --addr:\n%s", daemon)
	}
	m := regexp.MustCompile(`secret: ([0-9a-f]{64}) \((.*)\)`).FindStringSubmatch(text)
	if m == nil || doc.Secret != m[1] || doc.SecretFile != m[2] {
		t.Fatalf("secret %q in %q, text:\n%s", doc.Secret, doc.SecretFile, text)
	}

	out, _ = mustHC(t, t.TempDir(), "", "wake", "hooks", "--json")
	if !strings.Contains(out, `"hooks": []`) || !json.Valid([]byte(out)) {
		t.Fatalf("no webhook triggers: %s", out)
	}
}

// TestBeachIDJSON pins beach id --json: the agent id the text prints and
// the key file it signs with.
func TestBeachIDJSON(t *testing.T) {
	data := t.TempDir()
	text, _ := mustHC(t, data, "", "beach", "id")
	out, errOut := mustHC(t, data, "", "beach", "id", "--json")
	var doc struct {
		Agent   string `json:"agent"`
		KeyFile string `json:"key_file"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Agent != strings.TrimSpace(text) || doc.KeyFile != filepath.Join(data, "identity.key") {
		t.Fatalf("beach id --json: %v\n%s", err, out)
	}
	if _, err := os.Stat(doc.KeyFile); err != nil || !strings.Contains(errOut, "key: "+doc.KeyFile) {
		t.Fatalf("the key: %v; stderr %q", err, errOut)
	}
}

// TestBeachUseJSON pins beach use --json: the beach in use, from the
// default, the data directory's setting or --beach; setting one takes no
// --json (exit 2, nothing set).
func TestBeachUseJSON(t *testing.T) {
	data := t.TempDir()
	beachOf := func(args ...string) string {
		t.Helper()
		out, _ := mustHC(t, data, "", append(args, "beach", "use", "--json")...)
		var doc struct {
			Beach string `json:"beach"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("beach use --json: %v\n%s", err, out)
		}
		return doc.Beach
	}
	if got := beachOf(); got != hermitcrab.DefaultBeach {
		t.Fatalf("the default: %q", got)
	}
	out, _, err := hc(t, data, "", "beach", "use", "https://beach.example.org", "--json")
	if exitStatus(t, err) != 2 || out != "" {
		t.Fatalf("setting with --json: %v, stdout %q", err, out)
	}
	if got := beachOf(); got != hermitcrab.DefaultBeach {
		t.Fatalf("a refused setting was kept: %q", got)
	}
	mustHC(t, data, "", "beach", "use", "https://beach.example.org")
	if got := beachOf(); got != "https://beach.example.org" {
		t.Fatalf("after use: %q", got)
	}
	if got := beachOf("--beach", "http://127.0.0.1:9"); got != "http://127.0.0.1:9" {
		t.Fatalf("--beach: %q", got)
	}
}

// TestGlobalFlagsAreCheckedOnEveryPath pins that the global flags are
// refused (exit 2) by the paths that find no data directory, as by every
// other command: beach serve --db and beach use --beach. Both started (a
// beach that then failed to listen on a bad address, exit 1) or printed
// the beach (exit 0) before.
func TestGlobalFlagsAreCheckedOnEveryPath(t *testing.T) {
	data := t.TempDir()
	db := filepath.Join(t.TempDir(), "beach.db")
	for _, bad := range [][]string{{"--max-block-bytes", "0"}, {"--max-wakes", "-1"}, {"--max-wake-cost", "NaN"}, {"--data", ""}} {
		for _, args := range [][]string{
			{"beach", "serve", "--db", db, "--addr", "no-such-address"},
			{"beach", "serve", "--addr", "no-such-address"},
			{"--beach", "http://127.0.0.1:9", "beach", "use"},
		} {
			args := append(args, bad...)
			out, errOut, err := hc(t, data, "", args...)
			if exitStatus(t, err) != 2 || out != "" || !strings.Contains(errOut, bad[0]) || !strings.Contains(errOut, "--help' for usage.") {
				t.Errorf("%v: %v, stdout %q, stderr %q", args, err, out, errOut)
			}
		}
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("beach serve made its store before refusing the flags: %v", err)
	}
}
