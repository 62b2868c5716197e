package beach

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/identity"
	"github.com/llmkernels/kernels/internal/atomicfile"
)

// DefaultNonceWindow is how long a FileNonces remembers a message after it
// was signed, when FileNonces.Window is 0. Messages wait on a beach until
// their recipient reads them; one read within this long of being signed is
// checked against every message accepted in that time.
const DefaultNonceWindow = 30 * 24 * time.Hour

// minCompact is the fewest lines a FileNonces file has before it is worth
// rewriting without the pairs that fell out of the window.
const minCompact = 1024

// FileNonces is a Nonces kept in a file, so a replay is caught across
// restarts and between processes sharing a data directory: each Use holds
// an exclusive lock on Path.lock while it reads what other processes
// appended since its last look, and appends its pair.
//
// The file is one "agent nonce unix-nanoseconds" line per message
// accepted (the time is the message's signed time), after an optional
// "horizon unix-nanoseconds" line. Each Use reads only what was appended
// since this value last looked, so receiving n messages costs O(n), not
// O(n²). When the file has doubled since it was last rewritten (and holds
// over 1,024 lines) it is rewritten without the pairs signed more than
// Window before now, and the horizon moves to the newest time forgotten:
// from then on a message signed at or before the horizon is refused as
// stale (its nonce may have been forgotten), so the file stays bounded by
// the messages of one window without letting an old message be replayed.
// Lines written before the times were kept ("agent nonce") count as
// received when first read.
//
// Use a *FileNonces: it keeps what it has read.
type FileNonces struct {
	Path string
	// Window is how long a pair is remembered after its message was
	// signed; 0 means DefaultNonceWindow.
	Window time.Duration
	// Now is the clock pruning reads; nil means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	info    fs.FileInfo      // the file as last read, to notice a rewrite
	offset  int64            // bytes of it read
	pairs   map[string]int64 // "agent nonce" → signed time, unix ns
	horizon int64            // unix ns; 0: nothing forgotten yet
	lines   int              // pair lines in the file
	floor   int              // pair lines after the last rewrite
}

// Use implements Nonces.
func (f *FileNonces) Use(_ context.Context, agent, nonce string, signed time.Time) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	unlock, err := atomicfile.Lock(f.Path + ".lock")
	if err != nil {
		return false, err
	}
	defer unlock()
	partial, err := f.catchUp()
	if err != nil {
		return false, fmt.Errorf("received nonces %s: %w", f.Path, err)
	}
	if f.horizon != 0 && signed.UnixNano() <= f.horizon {
		return false, &identity.Refusal{Reason: identity.ReasonStale, Detail: fmt.Sprintf("signed %s, before this instance's replay memory begins (%s): its nonce cannot be checked; ask the sender to send it again",
			signed.UTC().Format(time.RFC3339), time.Unix(0, f.horizon).UTC().Format(time.RFC3339))}
	}
	key := agent + " " + nonce
	if _, seen := f.pairs[key]; seen {
		return false, nil
	}
	line := fmt.Sprintf("%s %d\n", key, signed.UnixNano())
	if partial {
		line = "\n" + line // a line a crash cut short stays a line of its own, ignored
	}
	if err := f.appendLine(line); err != nil {
		return false, fmt.Errorf("received nonces %s: %w", f.Path, err)
	}
	f.pairs[key] = signed.UnixNano()
	f.lines++
	if f.lines >= minCompact && f.lines >= 2*f.floor {
		if err := f.compact(); err != nil {
			return true, fmt.Errorf("received nonces %s: pruning: %w", f.Path, err)
		}
	}
	return true, nil
}

// catchUp reads what was appended since the last look, or the whole file
// when it was rewritten (or never read). partial reports a last line
// without its newline (a write a crash cut short).
func (f *FileNonces) catchUp() (partial bool, err error) {
	file, err := os.Open(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		f.reset(nil)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer func() { _ = file.Close() }() // read only
	st, err := file.Stat()
	if err != nil {
		return false, err
	}
	whole := f.pairs == nil || f.info == nil || !os.SameFile(f.info, st) || st.Size() < f.offset
	if whole {
		f.reset(st)
	}
	if _, err := file.Seek(f.offset, io.SeekStart); err != nil {
		return false, err
	}
	data, err := io.ReadAll(file)
	if err != nil {
		return false, err
	}
	end := bytes.LastIndexByte(data, '\n') + 1
	now := f.now().UnixNano()
	for _, l := range strings.Split(string(data[:end]), "\n") {
		fields := strings.Fields(l)
		switch {
		case len(fields) == 2 && fields[0] == "horizon":
			if h, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
				f.horizon = max(f.horizon, h)
			}
		case len(fields) == 3:
			if t, err := strconv.ParseInt(fields[2], 10, 64); err == nil {
				f.pairs[fields[0]+" "+fields[1]] = t
				f.lines++
			}
		case len(fields) == 2: // written before times were kept
			f.pairs[l] = now
			f.lines++
		}
	}
	f.offset += int64(end)
	f.info = st
	if whole {
		f.floor = f.lines // rewrite once it has doubled from here
	}
	return end < len(data), nil
}

func (f *FileNonces) reset(st fs.FileInfo) {
	f.info, f.offset, f.pairs, f.horizon, f.lines, f.floor = st, 0, map[string]int64{}, 0, 0, 0
}

func (f *FileNonces) appendLine(line string) error {
	file, err := os.OpenFile(f.Path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := file.WriteString(line); err != nil {
		return errors.Join(err, file.Close())
	}
	if err := file.Sync(); err != nil {
		return errors.Join(err, file.Close())
	}
	if err := file.Close(); err != nil {
		return err
	}
	st, err := os.Stat(f.Path)
	if err != nil {
		return err
	}
	f.info, f.offset = st, st.Size()
	return nil
}

// compact rewrites the file without the pairs signed before the window,
// moving the horizon to the newest time it forgets.
func (f *FileNonces) compact() error {
	window := f.Window
	if window <= 0 {
		window = DefaultNonceWindow
	}
	cutoff := f.now().Add(-window).UnixNano()
	var b strings.Builder
	kept := map[string]int64{}
	for k, t := range f.pairs {
		if t < cutoff {
			f.horizon = max(f.horizon, t)
			continue
		}
		kept[k] = t
	}
	if f.horizon != 0 {
		fmt.Fprintf(&b, "horizon %d\n", f.horizon)
	}
	for k, t := range kept {
		fmt.Fprintf(&b, "%s %d\n", k, t)
	}
	if err := atomicfile.Write(f.Path, []byte(b.String()), 0o600); err != nil {
		return err
	}
	st, err := os.Stat(f.Path)
	if err != nil {
		return err
	}
	f.info, f.offset, f.pairs, f.lines, f.floor = st, st.Size(), kept, len(kept), len(kept)
	return nil
}

func (f *FileNonces) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}
