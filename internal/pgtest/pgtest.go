//go:build linux

// Package pgtest runs a throwaway PostgreSQL for tests: Debian's server
// binaries (/usr/lib/postgresql/N/bin, the newest N), one cluster per test
// binary in a temporary directory on a free loopback port, and a fresh
// database for every test that asks.
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		url := pgtest.New(t) // postgres://…/t_…?sslmode=disable, dropped after the test
//	}
//
// The cluster starts on the first New, so a package whose PostgreSQL tests
// are skipped (-run) pays nothing, and Main stops it and removes its
// directory after the tests. The server is a child of the test binary with
// a parent-death signal, so a test binary killed outright takes its server
// with it; its temporary directory is removed by a later run (after ten
// minutes, when no server is running in it).
//
// initdb refuses to run as root, so as root the cluster runs as the
// "postgres" user (Debian's package makes it), else "nobody". It listens on
// 127.0.0.1 only and takes a random password (scram-sha-256), so other
// users of the machine cannot use it. fsync is off: the data is thrown away.
//
// Missing binaries skip the test with a message saying what to install,
// except when the CI environment variable is set: then they fail it, so a
// CI machine without PostgreSQL cannot pass by skipping.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoPostgres is wrapped when the server binaries are not installed.
var ErrNoPostgres = errors.New("PostgreSQL server binaries not found in /usr/lib/postgresql/*/bin (apt-get install postgresql)")

var (
	mainCalled atomic.Bool
	once       sync.Once
	shared     *Cluster
	startErr   error
	dbCounter  atomic.Int64
)

// Main runs the tests, stops the cluster if one was started, and exits.
// Call it (or Run) from TestMain; New refuses to run without it.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain with its own clean-up: it returns the exit
// code instead of exiting.
func Run(m *testing.M) int {
	mainCalled.Store(true)
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// New returns the URL of a new empty database in the test binary's
// cluster, starting the cluster on first use; the database is dropped when
// t ends.
func New(t testing.TB) string {
	t.Helper()
	if !mainCalled.Load() {
		t.Fatal("pgtest: call pgtest.Main(m) or pgtest.Run(m) from this package's TestMain, so the cluster is stopped after the tests")
	}
	once.Do(func() { shared, startErr = Start(context.Background()) })
	if startErr != nil {
		if errors.Is(startErr, ErrNoPostgres) && os.Getenv("CI") == "" {
			t.Skipf("pgtest: %v; skipping (in CI this fails)", startErr)
		}
		t.Fatalf("pgtest: %v", startErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, err := shared.CreateDatabase(ctx)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := shared.DropDatabase(ctx, u); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return u
}

// Cluster is a running throwaway PostgreSQL.
type Cluster struct {
	dir      string
	port     int
	password string
	cmd      *exec.Cmd
	exited   chan struct{}
	waitErr  error
}

// initdbGlob is where Debian installs initdb; PGTEST_INITDB_GLOB replaces
// it (pgtest's own tests point it at nothing to see the skip rule).
func initdbGlob() string {
	if g := os.Getenv("PGTEST_INITDB_GLOB"); g != "" {
		return g
	}
	return "/usr/lib/postgresql/*/bin/initdb"
}

// BinDir finds the newest installed PostgreSQL's server binaries.
func BinDir() (string, error) {
	matches, _ := filepath.Glob(initdbGlob())
	if len(matches) == 0 {
		return "", ErrNoPostgres
	}
	version := func(p string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(filepath.Dir(p))), 64)
		return v
	}
	sort.Slice(matches, func(i, j int) bool { return version(matches[i]) > version(matches[j]) })
	return filepath.Dir(matches[0]), nil
}

// Start initialises and starts a cluster. Stop stops it and removes its
// directory.
func Start(ctx context.Context) (*Cluster, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	sweep()
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	c := &Cluster{dir: dir, password: randomHex(16), exited: make(chan struct{})}
	fail := func(err error) (*Cluster, error) {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	pwfile := filepath.Join(dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(c.password+"\n"), 0o600); err != nil {
		return fail(err)
	}
	if cred != nil {
		for _, p := range []string{dir, pwfile} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return fail(fmt.Errorf("giving %s to the cluster's user: %w", p, err))
			}
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "pgtest", "--pwfile", pwfile,
		"--auth", "scram-sha-256", "-E", "UTF8", "--locale", "C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("initdb: %w\n%s", err, out))
	}
	// A free port can be taken between choosing and binding; try a few.
	for attempt := 0; ; attempt++ {
		if c.port, err = freePort(); err != nil {
			return fail(err)
		}
		err = c.start(ctx, bin, data, cred)
		if err == nil {
			return c, nil
		}
		if attempt == 2 {
			return fail(err)
		}
	}
}

func (c *Cluster) start(ctx context.Context, bin, data string, cred *syscall.Credential) error {
	logPath := filepath.Join(c.dir, "postgres.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	// postgres holds its own descriptor of the log; ours only has to go.
	defer func() { _ = logFile.Close() }()
	c.exited = make(chan struct{})
	c.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(c.port), "-k", c.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=200")
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	// SIGQUIT is PostgreSQL's immediate shutdown: if the test binary dies,
	// the server and its backends go at once.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	go func() { c.waitErr = c.cmd.Wait(); close(c.exited) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-c.exited:
			out, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres exited while starting (%v):\n%s", c.waitErr, out)
		case <-ctx.Done():
			c.kill()
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.kill()
			out, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres did not accept connections within 60s: %v\n%s", err, out)
		}
	}
}

func (c *Cluster) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGQUIT)
	<-c.exited
}

// URL is a connection URL for database db.
func (c *Cluster) URL(db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword("pgtest", c.password), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)), Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// CreateDatabase makes a new empty database and returns its URL.
func (c *Cluster) CreateDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("t_%d_%s", dbCounter.Add(1), randomHex(4))
	if err := c.admin(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("creating database %s: %w", name, err)
	}
	return c.URL(name), nil
}

// DropDatabase drops a database CreateDatabase made, closing its
// connections.
func (c *Cluster) DropDatabase(ctx context.Context, dbURL string) error {
	u, err := url.Parse(dbURL)
	if err != nil {
		return err
	}
	name := strings.TrimPrefix(u.Path, "/")
	if err := c.admin(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("dropping database %s: %w", name, err)
	}
	return nil
}

func (c *Cluster) admin(ctx context.Context, sql string) (err error) {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, conn.Close(ctx)) }()
	_, err = conn.Exec(ctx, sql)
	return err
}

// Stop shuts the server down (fast shutdown, then SIGKILL after 30 s) and
// removes the cluster's directory.
func (c *Cluster) Stop() error {
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.exited
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("removing the cluster directory: %w", err)
	}
	return nil
}

// sweep removes the directories of clusters whose test binary was killed
// (their server died with it): no live postmaster and untouched for ten
// minutes, so a cluster another test binary is still making is left alone.
func sweep() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "pgtest-*"))
	for _, d := range dirs {
		info, err := os.Stat(d)
		if err != nil || !info.IsDir() || time.Since(info.ModTime()) < 10*time.Minute {
			continue
		}
		if pidText, err := os.ReadFile(filepath.Join(d, "data", "postmaster.pid")); err == nil {
			first, _, _ := strings.Cut(string(pidText), "\n")
			if pid, err := strconv.Atoi(strings.TrimSpace(first)); err == nil {
				if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
					continue // still running
				}
			}
		}
		_ = os.RemoveAll(d)
	}
}

// credential is the user the cluster runs as: nil (this user) unless root.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root and neither a postgres nor a nobody user exists to run initdb as")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
