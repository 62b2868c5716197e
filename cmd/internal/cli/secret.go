package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxSecretLine bounds the line a secret is read from: keys are about a
// hundred bytes and tokens (JWTs) a few thousand; more is a file given by
// mistake, or /dev/zero, which is not read into memory whole.
const maxSecretLine = 64 << 10

// ReadSecretLine writes prompt to w and reads one line (an API key) from
// in. When in is a terminal, typing is not echoed while the line is read,
// so the secret never shows on the screen or in a terminal's scrollback
// (the prompt then says so), and echo comes back afterwards, also when ctx
// ends first (Ctrl-C). It reports whether echo was off. A last line without
// a newline is a line; an empty input is io.EOF.
func ReadSecretLine(ctx context.Context, in io.Reader, w io.Writer, prompt string) (line string, hidden bool, err error) {
	if f, ok := in.(*os.File); ok {
		if restore, err := noEcho(f); err == nil {
			defer restore()
			hidden = true
		}
	}
	if hidden {
		prompt += " (not shown as you type)"
	}
	fmt.Fprint(w, prompt+": ")
	type read struct {
		line string
		err  error
	}
	done := make(chan read, 1)
	go func() {
		l, err := bufio.NewReader(io.LimitReader(in, maxSecretLine+1)).ReadString('\n')
		if len(l) > maxSecretLine {
			l, err = "", fmt.Errorf("more than %d KiB without a line break: give the secret alone, on one line", maxSecretLine>>10)
		}
		done <- read{l, err}
	}()
	select {
	case r := <-done:
		if r.err == io.EOF && strings.TrimSpace(r.line) != "" {
			r.err = nil
		}
		return strings.TrimRight(r.line, "\r\n"), hidden, r.err
	case <-ctx.Done():
		// The reading goroutine stays blocked on in until the process
		// ends; the terminal gets its echo back now.
		return "", hidden, ctx.Err()
	}
}
