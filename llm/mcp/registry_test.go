package mcp

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestTheRegistryAddsListsAndRemoves(t *testing.T) {
	dir := t.TempDir()
	reg := Registry{Path: filepath.Join(dir, "mcp_servers.json"), LockPath: filepath.Join(t.TempDir(), "lock")}
	if servers, err := reg.Load(); err != nil || servers != nil {
		t.Fatalf("a missing file: %v, %v", servers, err)
	}
	web := Server{Name: "web", URL: httpServer(t, "").URL, Headers: map[string]string{"Authorization": secret}}
	offer, err := reg.Add(t.Context(), web, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(offer.Handlers) == 0 || len(offer.Notes) == 0 {
		t.Errorf("add tells what the server offers and what it leaves out: %v %q", names(offer), offer.Notes)
	}
	proc := stdioServer(t, "proc")
	if _, err := reg.Add(t.Context(), proc, Options{}); err != nil {
		t.Fatal(err)
	}

	var ierr *InvalidError
	if _, err := reg.Add(t.Context(), Server{Name: "WEB", URL: "http://127.0.0.1:1/mcp"}, Options{}); !errors.As(err, &ierr) || !strings.Contains(err.Error(), `a server named "web" is added already`) {
		t.Errorf("a taken name: %v", err)
	}
	servers, err := reg.Load()
	if err != nil || len(servers) != 2 || servers[0].Headers["Authorization"] != secret || servers[1].Env[stdioMode] != "serve" {
		t.Fatalf("loaded %+v, %v", servers, err)
	}
	list, err := reg.List()
	if err != nil || len(list) != 2 || list[0].Name != "web" || list[1].Name != "proc" {
		t.Errorf("list %+v, %v", list, err)
	}

	var nf *NotFoundError
	if _, err := reg.Remove("nosuch"); !errors.As(err, &nf) {
		t.Errorf("removing an unknown name: %v", err)
	}
	if removed, err := reg.Remove("Web"); err != nil || removed != "web" {
		t.Fatalf("removing Web: %q (want the stored name, web), %v", removed, err)
	}
	if servers, _ := reg.Load(); len(servers) != 1 || servers[0].Name != "proc" {
		t.Errorf("after remove: %+v", servers)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files left beside the registry: %v", entries)
	}
}

// The file holds secrets: it is 0600 whatever the umask; one someone
// loosened is refused (TestARegistryFileOthersCanReadIsRefused) until
// chmod 600, and stays 0600 when written again.
func TestTheRegistryFileIsReadableByItsOwnerOnly(t *testing.T) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
	reg := Registry{Path: filepath.Join(t.TempDir(), "mcp_servers.json")}
	mode := func() os.FileMode {
		t.Helper()
		fi, err := os.Stat(reg.Path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	if _, err := reg.Add(t.Context(), stdioServer(t, "proc"), Options{}); err != nil {
		t.Fatal(err)
	}
	if m := mode(); m != 0o600 {
		t.Errorf("mode %o after add", m)
	}
	if err := os.Chmod(reg.Path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Remove("proc"); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("remove from a 0644 file: %v", err)
	}
	if err := os.Chmod(reg.Path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Remove("proc"); err != nil {
		t.Fatal(err)
	}
	if m := mode(); m != 0o600 {
		t.Errorf("mode %o after remove", m)
	}
}

// A server that does not answer is refused at add (exit 1 for a
// command), a malformed one too (exit 2), and neither is stored.
func TestAddRefusesWhatCannotWork(t *testing.T) {
	gone := httptest.NewServer(nil)
	gone.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	reg := Registry{Path: filepath.Join(t.TempDir(), "mcp_servers.json")}
	for _, c := range []struct {
		srv   Server
		words string
	}{
		{Server{Name: "down", URL: gone.URL}, "connection refused"},
		{Server{Name: "none", Command: filepath.Join(t.TempDir(), "no-such-server")}, "no such file or directory"},
		{Server{Name: "crash", Command: exe, Env: map[string]string{stdioMode: "crash"}}, "it wrote on stderr: fatal: no config file at /etc/nowhere.conf"},
		{Server{Name: "notmcp", Command: "/bin/sh", Args: []string{"-c", "echo pid $$ >&2; echo hello; exec sleep 30"}}, `mcp server "notmcp" cannot be reached`},
	} {
		_, err := reg.Add(t.Context(), c.srv, Options{})
		var uerr *UnreachableError
		if !errors.As(err, &uerr) || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%s: want an unreachable error about %q, got %v", c.srv.Name, c.words, err)
		}
		// A command that is not an MCP server is not left running.
		if _, pid, ok := strings.Cut(uerr.Detail, "it wrote on stderr: pid "); ok {
			for deadline := time.Now().Add(10 * time.Second); alive(t, pid); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%s: the command (pid %s) lives on", c.srv.Name, pid)
				}
			}
		} else if c.srv.Name == "notmcp" {
			t.Errorf("no pid in %q", uerr.Detail)
		}
	}
	var ierr *InvalidError
	if _, err := reg.Add(t.Context(), Server{Name: "web", URL: "ftp://example.com"}, Options{}); !errors.As(err, &ierr) {
		t.Errorf("a malformed URL: %v", err)
	}
	if _, err := os.Stat(reg.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused server was stored: %v", err)
	}
}

func TestABrokenRegistryFileIsNamed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp_servers.json")
	reg := Registry{Path: path}
	for body, words := range map[string]string{
		`{"servers":[{"name":"web","url":"https://a/mcp","hedaers":{}}]}`:                         `unknown field "hedaers"`,
		`{"servers":[{"name":"web","url":"ftp://a"}]}`:                                            "starts with http:// or https://",
		`{"servers":[{"name":"web","url":"https://a/mcp"},{"name":"Web","url":"https://b/mcp"}]}`: "another server is named",
		`not json`: "invalid character",
	} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := reg.Load()
		var ierr *InvalidError
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), words) || errors.As(err, &ierr) {
			t.Errorf("%s: want an error naming the file and %q (not a usage error), got %v", body, words, err)
		}
	}
}

// The file holds the servers' secrets: one its group or others can read
// is refused, naming the chmod that fixes it, not used as if nothing were
// wrong; what the registry writes itself is 0600 and read back.
func TestARegistryFileOthersCanReadIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp_servers.json")
	if err := os.WriteFile(path, []byte(`{"servers":[{"name":"web","url":"https://a/mcp","headers":{"X-Key":"hunter2"}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := Registry{Path: path}
	if _, err := reg.Load(); err == nil || !strings.Contains(err.Error(), "chmod 600 "+path) || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("a 0644 registry: %v", err)
	}
	if _, err := reg.List(); err == nil {
		t.Fatal("list read a 0644 registry")
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if servers, err := reg.Load(); err != nil || len(servers) != 1 {
		t.Fatalf("after chmod 600: %v %v", servers, err)
	}
}

// Adds and removes at once all keep their change: the file is read again
// under the registry's lock once each server answered. Before, each add
// read the file, probed its server and wrote its list back, so the slower
// of two adds wrote over the other's: both said the server was added, and
// one was lost.
func TestAddsAtOnceAllKeepTheirServer(t *testing.T) {
	dir := t.TempDir()
	reg := Registry{Path: filepath.Join(dir, "mcp_servers.json"), LockPath: filepath.Join(t.TempDir(), "lock")}
	url := httpServer(t, "").URL
	if _, err := reg.Add(t.Context(), Server{Name: "gone", URL: url}, Options{}); err != nil {
		t.Fatal(err)
	}
	const n = 6
	errs := make(chan error, n+1)
	for i := range n {
		go func() {
			_, err := reg.Add(t.Context(), Server{Name: fmt.Sprintf("s%d", i), URL: url}, Options{})
			errs <- err
		}()
	}
	go func() { _, err := reg.Remove("gone"); errs <- err }()
	for range n + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	servers, err := reg.Load()
	if err != nil || len(servers) != n {
		t.Fatalf("%d servers after %d adds at once and a remove: %+v, %v", len(servers), n, servers, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files beside the registry: %v", entries)
	}
	// Two adds of one name at once: one is refused, not both stored.
	for range 2 {
		go func() {
			_, err := reg.Add(t.Context(), Server{Name: "twice", URL: url}, Options{})
			errs <- err
		}()
	}
	var ierr *InvalidError
	if a, b := <-errs, <-errs; (a == nil) == (b == nil) || !errors.As(errors.Join(a, b), &ierr) {
		t.Errorf("two adds of one name: %v and %v; want one refused as taken", a, b)
	}
}
