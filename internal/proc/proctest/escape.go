//go:build linux

package proctest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Escape is a model-written program's attempts to leave its confinement,
// and what they aim at: an SSH key and an API key file in a home, a
// directory outside the program's, a server on the kernel's loopback and
// the cloud metadata address. Limits a test confines it with: 64
// processes, 1 GiB of memory, 1 MiB of output.
type Escape struct {
	Home, KeyFile, Outside, Server, NetNS string
}

// NewEscape makes the targets; HOME is the home for the test.
func NewEscape(t *testing.T) *Escape {
	t.Helper()
	e := &Escape{Home: t.TempDir(), Outside: t.TempDir()}
	e.KeyFile = filepath.Join(e.Home, ".config", "llmkernels", "api_key")
	for p, content := range map[string]string{
		filepath.Join(e.Home, ".ssh", "id_ed25519"): "SSH-PRIVATE-KEY",
		e.KeyFile:                          "sk-ant-KEY-FILE-0123456789",
		filepath.Join(e.Outside, "secret"): "OUTSIDE-SECRET",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", e.Home)
	e.Server = LoopbackServer(t)
	e.NetNS, _ = os.Readlink("/proc/self/ns/net")
	return e
}

// LoopbackServer listens on the kernel's loopback, accepting and closing
// connections until the test ends, and returns its address.
func LoopbackServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() }) // the test is over; nothing to tell
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close() // a client's connection, closed unread: its error says nothing
		}
	}()
	return l.Addr().String()
}

// attempts is the order of the attempts, each printed as "NAME: refused
// (why)" or "NAME: DONE"; own-read and own-write are allowed ("ok").
var attempts = []string{"own-read", "own-write", "read-ssh-key", "read-api-key-file", "write-outside", "symlink-out",
	"connect-loopback", "connect-metadata", "fork-10000", "allocate-8GiB", "write-10GB"}

// Python is the program (Python 3). It reads input.txt and writes
// output.txt in its directory, then tries each escape. It dials
// 169.254.169.254 only from another network namespace than the kernel's:
// a broken confinement fails the test, never sends a packet there.
func (e *Escape) Python() string {
	host, port, _ := net.SplitHostPort(e.Server)
	return fmt.Sprintf(`import os, socket, sys, time

def attempt(name, f):
    try:
        r = f()
        print(name + ": " + (r or "DONE"), flush=True)
    except BaseException as ex:
        print(name + ": refused (" + type(ex).__name__ + ": " + str(ex) + ")", flush=True)

def own_read():
    open("input.txt").read()
    return "ok"

def own_write():
    open("output.txt", "w").write("written")
    return "ok"

def symlink_out():
    os.symlink(%[3]q + "/secret", "link-out")
    return open("link-out").read()

def connect(host, port):
    def f():
        if host == "169.254.169.254" and os.readlink("/proc/self/ns/net") == %[6]q:
            raise RuntimeError("same network namespace as the kernel: not dialled")
        socket.create_connection((host, port), timeout=3).close()
    return f

def fork():
    kids, refused = [], 0
    for i in range(10000):
        try:
            pid = os.fork()
        except OSError as ex:
            refused += 1
            if refused == 100:
                break
            continue
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        kids.append(pid)
    for k in kids:
        os.kill(k, 9)
        os.waitpid(k, 0)
    if refused:
        raise OSError("started %%d, then forks were refused" %% len(kids))

def allocate():
    b = bytearray(8 << 30)

def write_10gb():
    chunk = b"x" * (1 << 20)
    with open("big", "wb") as f:
        for i in range(10240):
            f.write(chunk)

attempt("own-read", own_read)
attempt("own-write", own_write)
attempt("read-ssh-key", lambda: open(%[1]q + "/.ssh/id_ed25519").read())
attempt("read-api-key-file", lambda: open(%[2]q).read())
attempt("write-outside", lambda: open(%[3]q + "/written", "w").write("x"))
attempt("symlink-out", symlink_out)
attempt("connect-loopback", connect(%[4]q, %[5]s))
attempt("connect-metadata", connect("169.254.169.254", 80))
attempt("fork-10000", fork)
attempt("allocate-8GiB", allocate)
attempt("write-10GB", write_10gb)
`, e.Home, e.KeyFile, e.Outside, host, port, e.NetNS)
}

// Check fails t unless output shows the allowed accesses done and every
// escape refused, each with its reason, and nothing written outside.
func (e *Escape) Check(t *testing.T, output string) {
	t.Helper()
	for _, name := range attempts {
		want := name + ": refused ("
		if strings.HasPrefix(name, "own-") {
			want = name + ": ok"
		}
		if !strings.Contains(output, want) {
			t.Errorf("want %q in the output:\n%s", want, output)
		}
	}
	for _, leak := range []string{"SSH-PRIVATE-KEY", "KEY-FILE", "OUTSIDE-SECRET", "not dialled"} {
		if strings.Contains(output, leak) {
			t.Errorf("the program got %q:\n%s", leak, output)
		}
	}
	if _, err := os.Stat(filepath.Join(e.Outside, "written")); err == nil {
		t.Error("the program wrote outside its directory")
	}
}
