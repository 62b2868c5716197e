//go:build ignore

// Command gen bundles React and ReactDOM, as pinned by package.json and
// installed from package-lock.json by npm ci, into hermitcrab/web/assets/react.js
// with esbuild's Go API: one minified production IIFE that sets window.React
// and window.ReactDOM, where ReactDOM is react-dom merged with
// react-dom/client (createRoot and hydrateRoot beside createPortal and
// flushSync).
//
// The bundle is committed, so that `go build ./...` and `go install` on a
// fresh clone give a working hermitcrab without Node.js. It is reproducible:
// the same package-lock.json gives the same bytes, and `make test` runs gen
// with -check, which fails when the committed file differs from a fresh
// build. After changing package.json or the lock, regenerate and commit it.
//
// Run it from the repository root (make react does):
//
//	npm ci && go run hermitcrab/web/assets/gen.go [-check]
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/llmkernels/kernels/internal/atomicfile"
)

// out is where the bundle goes, relative to the repository root.
const out = "hermitcrab/web/assets/react.js"

// entry is the bundle's entry point.
const entry = `window.React = require("react");
window.ReactDOM = Object.assign({}, require("react-dom"), require("react-dom/client"));
`

func main() {
	check := flag.Bool("check", false, "compare the committed bundle with a fresh build instead of writing it; exit 1 when they differ")
	flag.Parse()
	if err := run(*check); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(check bool) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	pins, err := checkInstalled(root)
	if err != nil {
		return err
	}
	res := api.Build(api.BuildOptions{
		Stdin: &api.StdinOptions{
			Contents:   entry,
			ResolveDir: root,
			Sourcefile: "react-entry.js",
			Loader:     api.LoaderJS,
		},
		Bundle:            true,
		Format:            api.FormatIIFE,
		Platform:          api.PlatformBrowser,
		Target:            api.ES2020,
		Define:            map[string]string{"process.env.NODE_ENV": `"production"`},
		MinifyWhitespace:  true,
		MinifyIdentifiers: true,
		MinifySyntax:      true,
		LegalComments:     api.LegalCommentsEndOfFile, // React's MIT notices stay in the bundle
		Outfile:           out,
		Write:             false,
		LogLevel:          api.LogLevelSilent,
	})
	if len(res.Errors) > 0 {
		msgs := api.FormatMessages(res.Errors, api.FormatMessagesOptions{Kind: api.ErrorMessage})
		return fmt.Errorf("esbuild could not bundle React from %s:\n%s", filepath.Join(root, "node_modules"), strings.Join(msgs, ""))
	}
	if len(res.OutputFiles) != 1 {
		return fmt.Errorf("esbuild produced %d files, want 1 (%s)", len(res.OutputFiles), out)
	}
	code := res.OutputFiles[0].Contents
	if check {
		committed, err := os.ReadFile(filepath.Join(root, out))
		if err != nil {
			return fmt.Errorf("%w: regenerate it with make react and commit it", err)
		}
		if !bytes.Equal(committed, code) {
			return fmt.Errorf("%s (%d bytes) differs from a fresh build from package-lock.json (%d bytes, %s): regenerate it with make react and commit it", out, len(committed), len(code), pins)
		}
		fmt.Printf("gen: %s is a fresh build (%s)\n", out, pins)
		return nil
	}
	if err := atomicfile.Write(filepath.Join(root, out), code, 0o644); err != nil {
		return err
	}
	fmt.Printf("gen: wrote %s: %d bytes (%s; production, minified)\n", out, len(code), pins)
	return nil
}

// checkInstalled makes sure node_modules holds each dependency of
// package.json at its pinned version, and returns them as "name version, …".
func checkInstalled(root string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(root, "package.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("no package.json in %s: run gen from the repository root: go run %s", root, strings.TrimSuffix(out, "react.js")+"gen.go")
	}
	if err != nil {
		return "", err
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		return "", fmt.Errorf("package.json in %s: %v", root, err)
	}
	var pins []string
	for _, name := range slices.Sorted(maps.Keys(pkg.Dependencies)) {
		want := pkg.Dependencies[name]
		raw, err := os.ReadFile(filepath.Join(root, "node_modules", name, "package.json"))
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("node_modules/%s is missing in %s: run npm ci first", name, root)
		}
		if err != nil {
			return "", err
		}
		var installed struct {
			Version string `json:"version"`
		}
		if err := json.Unmarshal(raw, &installed); err != nil {
			return "", fmt.Errorf("node_modules/%s/package.json: %v: run npm ci first", name, err)
		}
		if installed.Version != want {
			return "", fmt.Errorf("node_modules has %s %s but package.json pins %s: run npm ci first", name, installed.Version, want)
		}
		pins = append(pins, name+" "+want)
	}
	if len(pins) == 0 {
		return "", fmt.Errorf("package.json in %s lists no dependencies: it should pin react and react-dom", root)
	}
	return strings.Join(pins, ", "), nil
}
