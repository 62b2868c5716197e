package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pty opens a pseudo-terminal: the master (what a terminal emulator holds)
// and the slave (a program's standard input).
func pty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// echoed reads what the terminal shows until it shows want.
func echoed(t *testing.T, master *os.File, want string) string {
	t.Helper()
	var seen strings.Builder
	buf := make([]byte, 256)
	master.SetReadDeadline(time.Now().Add(30 * time.Second))
	for !strings.Contains(seen.String(), want) {
		n, err := master.Read(buf)
		if err != nil {
			t.Fatalf("the terminal showed %q, never %q: %v", seen.String(), want, err)
		}
		seen.Write(buf[:n])
	}
	return seen.String()
}

func TestASecretTypedAtATerminalIsNotEchoedAndEchoComesBack(t *testing.T) {
	master, slave := pty(t)
	got := make(chan string, 1)
	go func() {
		line, hidden, err := ReadSecretLine(context.Background(), slave, io.Discard, "key")
		got <- fmt.Sprint(line, " ", hidden, " ", err)
	}()
	// Type only once echo is off (the reader turns it off before reading).
	for deadline := time.Now().Add(30 * time.Second); ; {
		tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if tio.Lflag&unix.ECHO == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("echo was never turned off")
		}
		time.Sleep(5 * time.Millisecond)
	}
	master.Write([]byte("sk-ant-secret\n"))
	if r := <-got; r != "sk-ant-secret true <nil>" {
		t.Fatalf("read %q", r)
	}
	// Echo is back: what is typed now shows, and the secret never did.
	master.Write([]byte("visible\n"))
	if shown := echoed(t, master, "visible"); strings.Contains(shown, "secret") {
		t.Fatalf("the terminal showed the secret: %q", shown)
	}
}

func TestASecretReadIsCancelledWithItsContextAndEchoComesBack(t *testing.T) {
	_, slave := pty(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := ReadSecretLine(ctx, slave, io.Discard, "key"); err != context.Canceled {
		t.Fatalf("err = %v", err)
	}
	tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil || tio.Lflag&unix.ECHO == 0 {
		t.Fatalf("echo is still off after Ctrl-C: %v", err)
	}
}

func TestASecretFromAPipeIsReadWhole(t *testing.T) {
	for in, want := range map[string]string{"sk-1\n": "sk-1", "sk-2": "sk-2", "sk-3\r\nmore\n": "sk-3"} {
		line, hidden, err := ReadSecretLine(context.Background(), strings.NewReader(in), io.Discard, "key")
		if line != want || hidden || err != nil {
			t.Errorf("%q: %q %v %v", in, line, hidden, err)
		}
	}
	if _, _, err := ReadSecretLine(context.Background(), strings.NewReader(""), io.Discard, "key"); err == nil {
		t.Error("an empty input read as a key")
	}
}
