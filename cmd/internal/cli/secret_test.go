package cli

import (
	"context"
	"io"
	"strings"
	"testing"
)

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// A secret is one line: `key set < /dev/zero` (or a file pasted by
// mistake) is refused after a bounded read, never read into memory whole,
// and the error does not repeat what was read.
func TestASecretLineIsReadBounded(t *testing.T) {
	in := &countingReader{r: strings.NewReader(strings.Repeat("a", 8<<20))}
	line, _, err := ReadSecretLine(context.Background(), in, io.Discard, "key")
	if err == nil || line != "" {
		t.Fatalf("an 8 MiB line was read as a secret: %d bytes, %v", len(line), err)
	}
	if strings.Contains(err.Error(), "aaaa") || !strings.Contains(err.Error(), "one line") {
		t.Errorf("the error: %.200s", err)
	}
	if in.n > 2*maxSecretLine {
		t.Errorf("read %d bytes of a line that cannot be a secret", in.n)
	}
	long := strings.Repeat("k", 8<<10) // a long token (a JWT) is fine
	if line, _, err := ReadSecretLine(context.Background(), strings.NewReader(long+"\n"), io.Discard, "key"); line != long || err != nil {
		t.Errorf("an 8 KiB token: %d bytes, %v", len(line), err)
	}
}
