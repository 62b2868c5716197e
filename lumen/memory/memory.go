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
	"os"
	"path/filepath"
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

// Memory is one line of a memory file. The spec's five fields, then the
// stable id, then optional fields that carry what the kernel needs to
// replay weights, account for spend and audit itself.
type Memory struct {
	// ID is a ULID given when the line is written; references to the
	// memory (Used, Judged, explained_by in data, summary markers) use it.
	// Lines written before ids existed have none: the index derives one
	// (see legacyID).
	ID          string    `json:"id,omitempty"`
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
	// Judged gives the importance (0..1) the model judged for earlier
	// memories, by id: an input is stored before the model reads it, and
	// its importance comes with the model's answer.
	Judged map[string]float64 `json:"judged,omitempty"`
	// Decay marks a maintenance pass that decays every earlier memory.
	Decay *Decay `json:"decay,omitempty"`
	// Model is the provider and model ("anthropic/claude-sonnet-4-5") whose
	// answer this memory records, when a model was involved.
	Model string `json:"model,omitempty"`
	// Usage is the LLM spend not yet recorded when this line was written:
	// every call is accounted on exactly one line, so spend per day is a
	// sum over the files.
	Usage *Usage `json:"usage,omitempty"`
	// Data holds the step's structured details (scores, deltas, before and
	// after states) for audits.
	Data json.RawMessage `json:"data,omitempty"`
}

// Usage is what LLM calls cost. InputTokens is the whole prompt: the
// tokens read from the prompt cache and written to it are part of it, and
// counted again apart.
type Usage struct {
	Calls            int     `json:"calls"`
	InputTokens      int     `json:"input_tokens"`
	OutputTokens     int     `json:"output_tokens"`
	CacheReadTokens  int     `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int     `json:"cache_write_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd"`
	// ScriptedUSD is the part of CostUSD metered on a scripted provider:
	// what the calls would have cost on the models they name, nothing
	// charged (llm.Client.Scripted). It counts against the caps as the
	// rest does; what shows it says so.
	ScriptedUSD float64 `json:"scripted_usd,omitempty"`
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.Calls += o.Calls
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheReadTokens += o.CacheReadTokens
	u.CacheWriteTokens += o.CacheWriteTokens
	u.CostUSD += o.CostUSD
	u.ScriptedUSD += o.ScriptedUSD
}

// Sub is u less o: what was spent since o was u.
func (u Usage) Sub(o Usage) Usage {
	return Usage{Calls: u.Calls - o.Calls, InputTokens: u.InputTokens - o.InputTokens, OutputTokens: u.OutputTokens - o.OutputTokens,
		CacheReadTokens: u.CacheReadTokens - o.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens - o.CacheWriteTokens, CostUSD: u.CostUSD - o.CostUSD,
		ScriptedUSD: u.ScriptedUSD - o.ScriptedUSD}
}

// Zero reports whether u records no call.
func (u Usage) Zero() bool { return u.Calls == 0 && u.CostUSD == 0 }

// Decay is a maintenance pass: at the memory's timestamp, every earlier
// memory's weight is multiplied by 0.5^(idle/half-life), idle being the time
// since it was last used or decayed.
type Decay struct {
	HalfLifeHours float64 `json:"half_life_hours"`
}

// Entry is a memory as the index knows it.
type Entry struct {
	// ID is the memory's id (its line's, or the one derived for a line
	// written without one).
	ID string `json:"id"`
	Memory
	// Day and Offset are where the line is now: its day file and the byte
	// offset of its start.
	Day    string `json:"day"`
	Offset int64  `json:"offset"`
	// Importance is what the memory was judged worth when written (its
	// line's weight, or the model's later judgment); Strength adds every
	// use to it (capped at 1).
	Importance float64 `json:"importance"`
	Strength   float64 `json:"strength"`
	// Current is the spec's weight now: the written weight after every use
	// and decay pass replayed.
	Current float64 `json:"current_weight"`
	// LastAccess is when the memory was written or last used.
	LastAccess time.Time `json:"last_access"`
	// Seq orders entries as the index read them (day file, then offset).
	Seq int64 `json:"-"`
}

// Day is the UTC date that names t's memory file.
func Day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// dayPath is the file of a day under dir.
func dayPath(dir, day string) string {
	return filepath.Join(dir, day[:4], day+".jsonl")
}

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
	case strings.ContainsAny(m.ID, " \t\r\n"):
		return fmt.Errorf("memory id %q: must not contain spaces", m.ID)
	}
	for id, v := range m.Judged {
		if v < 0 || v > 1 {
			return fmt.Errorf("memory judges the importance of %s as %v: must be within 0..1", id, v)
		}
	}
	return nil
}

// appendLine appends m as one line to its day file under dir and returns
// its id (a new ULID unless m carries one). The file is locked
// (atomicfile.LockFile) for the write, so lines from several
// processes never interleave; a torn last line left by a killed writer is
// closed with a newline first, so it cannot swallow this one.
func appendLine(dir string, m Memory) (id string, err error) {
	if err := m.Validate(); err != nil {
		return "", err
	}
	m.Timestamp = m.Timestamp.UTC()
	if m.ID == "" {
		m.ID = NewID(m.Timestamp)
	}
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
	if offset := st.Size(); offset > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, offset-1); err != nil {
			return "", fmt.Errorf("memory: read %s: %w", path, err)
		}
		if last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	if _, err := f.Write(line); err != nil {
		return "", fmt.Errorf("memory: append to %s: %w", path, err)
	}
	return m.ID, nil
}

// line is one complete line read from a day file.
type line struct {
	offset int64
	text   []byte
}

// splitLines cuts data, a day file's bytes, into its complete lines from
// offset from on, and returns them with the offset just past the last
// newline: a line still being written (no newline yet) is left for the
// next read.
func splitLines(data []byte, from int64) ([]line, int64) {
	var lines []line
	pos := from
	for {
		nl := bytes.IndexByte(data[pos:], '\n')
		if nl < 0 {
			break
		}
		if nl > 0 {
			lines = append(lines, line{offset: pos, text: data[pos : pos+int64(nl)]})
		}
		pos += int64(nl) + 1
	}
	return lines, pos
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
