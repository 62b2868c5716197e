// Package memory is Lumen's memory. The source of truth is append-only
// JSONL, one file per day (data/memory/[year]/[year]-[month]-[day].jsonl,
// dates in UTC); every line is written with one write under an exclusive
// file lock, so processes appending at once produce interleaved but intact
// lines. Beside the files lives a derived SQLite index (current weights,
// FTS5 full-text search, cached embeddings) that Sync brings up to date and
// Rebuild recreates from the files alone.
//
// Weights never rewrite history. A memory's line keeps the weight it was
// written with; its current weight lives in the index and is replayed from
// the log itself: a memory whose Used lists ids strengthens each of them by
// a fixed increment, and a memory carrying Decay (a maintenance pass) decays
// every earlier memory by time since it was last used or decayed. Replaying
// the same files gives the same weights.
package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/atomicfile"
)

// Authors of memories.
const (
	Self     = "self"     // the reflection loop's reasoning, explore findings
	Kernel   = "kernel"   // the audit trail: every step the kernel ran
	Goal     = "goal"     // a goal the loop chose to pursue
	External = "external" // input from outside (chat)
)

// ValidAuthor reports whether a is one of the four authors.
func ValidAuthor(a string) bool {
	switch a {
	case Self, Kernel, Goal, External:
		return true
	}
	return false
}

// Memory is one line of a memory file. The first five fields are the spec's;
// the rest are optional and carry what the kernel needs to replay weights
// and audit itself.
type Memory struct {
	Timestamp   time.Time `json:"timestamp"`
	Author      string    `json:"author"`
	Weight      float64   `json:"weight"`
	Situation   string    `json:"situation"`
	Description string    `json:"description"`
	// Step names the kernel step that wrote the memory (think, decide, …).
	Step string `json:"step,omitempty"`
	// Used lists the ids of memories this step retrieved and used; each is
	// strengthened when this line is indexed.
	Used []string `json:"used,omitempty"`
	// Decay marks a maintenance pass that decays every earlier memory.
	Decay *Decay `json:"decay,omitempty"`
	// Data holds the step's structured details (scores, deltas, before and
	// after states) for audits.
	Data json.RawMessage `json:"data,omitempty"`
}

// Decay is a maintenance pass: at the memory's timestamp, every earlier
// memory's weight is multiplied by 0.5^(idle/half-life), idle being the time
// since it was last used or decayed.
type Decay struct {
	HalfLifeHours float64 `json:"half_life_hours"`
}

// Entry is a memory as the index knows it.
type Entry struct {
	// ID is "[year]-[month]-[day]@[byte offset]": the day file and where the
	// line starts in it. Stable, because the files are append-only.
	ID string `json:"id"`
	Memory
	// Current is the weight now: the written weight after every use and
	// decay replayed.
	Current float64 `json:"current_weight"`
	// Seq orders entries as the index read them (day file, then offset).
	Seq int64 `json:"-"`
}

// Day is the UTC date that names t's memory file.
func Day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// dayPath is the file of a day under dir.
func dayPath(dir, day string) string {
	return filepath.Join(dir, day[:4], day+".jsonl")
}

// MakeID is the id of the line starting at offset in day's file.
func MakeID(day string, offset int64) string { return day + "@" + strconv.FormatInt(offset, 10) }

// Validate says what is wrong with m, if anything.
func (m *Memory) Validate() error {
	switch {
	case !ValidAuthor(m.Author):
		return fmt.Errorf("memory author %q: use self, kernel, goal or external", m.Author)
	case m.Weight < 0 || m.Weight > 1:
		return fmt.Errorf("memory weight %v: must be within 0..1", m.Weight)
	case strings.TrimSpace(m.Description) == "":
		return fmt.Errorf("memory by %s at step %q has an empty description: say what happened", m.Author, m.Step)
	case m.Decay != nil && m.Decay.HalfLifeHours <= 0:
		return fmt.Errorf("memory decay half-life %v hours: must be positive", m.Decay.HalfLifeHours)
	}
	return nil
}

// appendLine appends m as one line to its day file under dir and returns
// its id. The file is locked (atomicfile.LockFile) for the write, so lines from several
// processes never interleave; a torn last line left by a killed writer is
// closed with a newline first, so it cannot swallow this one.
func appendLine(dir string, m Memory) (id string, err error) {
	if err := m.Validate(); err != nil {
		return "", err
	}
	m.Timestamp = m.Timestamp.UTC()
	line, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("memory: encode: %w", err)
	}
	line = append(line, '\n')
	day := Day(m.Timestamp)
	path := dayPath(dir, day)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("memory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return "", fmt.Errorf("memory: %w", err)
	}
	// Closing releases the lock, and may be where a failed write shows:
	// then the line is not reported as written.
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			id, err = "", fmt.Errorf("memory: append to %s: %w", path, cerr)
		}
	}()
	if err := atomicfile.LockFile(f); err != nil {
		return "", fmt.Errorf("memory: lock %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("memory: %w", err)
	}
	offset := st.Size()
	if offset > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, offset-1); err != nil {
			return "", fmt.Errorf("memory: read %s: %w", path, err)
		}
		if last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
			offset++
		}
	}
	if _, err := f.Write(line); err != nil {
		return "", fmt.Errorf("memory: append to %s: %w", path, err)
	}
	return MakeID(day, offset), nil
}

// line is one complete line read from a day file.
type line struct {
	offset int64
	text   []byte
}

// readLines reads the complete lines of path from offset on, and returns
// them with the offset just past the last newline: a line still being
// written (no newline yet) is left for the next read.
func readLines(path string, offset int64) ([]line, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, offset, err
	}
	defer func() { _ = f.Close() }() // read only: what was read is the answer
	data, err := io.ReadAll(io.NewSectionReader(f, offset, 1<<62))
	if err != nil {
		return nil, offset, err
	}
	var lines []line
	pos := 0
	for {
		nl := bytes.IndexByte(data[pos:], '\n')
		if nl < 0 {
			break
		}
		if nl > 0 {
			lines = append(lines, line{offset: offset + int64(pos), text: data[pos : pos+nl]})
		}
		pos += nl + 1
	}
	return lines, offset + int64(pos), nil
}

// decode parses one line; a line that is not a valid memory is reported
// and skipped by the caller, never fatal.
func decode(text []byte) (Memory, error) {
	var m Memory
	if err := json.Unmarshal(text, &m); err != nil {
		return m, err
	}
	if m.Timestamp.IsZero() {
		return m, errors.New("no timestamp")
	}
	return m, m.Validate()
}

// dayFiles lists the day files under dir in date order, as day names.
func dayFiles(dir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "[0-9][0-9][0-9][0-9]", "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9].jsonl"))
	if err != nil {
		return nil, err
	}
	days := make([]string, len(paths))
	for i, p := range paths {
		days[i] = strings.TrimSuffix(filepath.Base(p), ".jsonl")
	}
	return days, nil // Glob sorts, and the names sort by date
}
