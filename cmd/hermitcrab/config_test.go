package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A model configured for a tier (hermitcrab.models in the config file)
// runs the tier whose wake block names none, and says so; a model set for
// the other kernels (model) does not.
func TestAConfiguredTierModelRunsATierWithoutOne(t *testing.T) {
	dir := t.TempDir()
	shell, _ := mustHC(t, filepath.Join(dir, "seed"), "", "blocks", "export")
	if !strings.Contains(shell, `"model claude-sonnet-4-6"`) {
		t.Fatalf("the default shell no longer names the present tier's model: %.200s", shell)
	}
	shellFile := filepath.Join(dir, "shell.json")
	config := filepath.Join(dir, "config.toml")
	for path, text := range map[string]string{
		shellFile: strings.Replace(shell, `"model claude-sonnet-4-6"`, `"max_tokens 8192"`, 1),
		config:    "model = \"for-lumen-and-solve\"\n[hermitcrab.models]\npresent = \"configured-present\"\n",
	} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, errOut := mustHC(t, filepath.Join(dir, "data"), "hello\n", "chat", "--shell", shellFile, "--config", config,
		"--provider", "script", "--script", "testdata/chat.json")
	if !strings.Contains(errOut, "using configured-present, the model configured for the tier") || strings.Contains(errOut, "for-lumen-and-solve") {
		t.Fatalf("stderr:\n%s", errOut)
	}
}
