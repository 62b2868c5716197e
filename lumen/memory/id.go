package memory

import (
	"crypto/rand"
	"crypto/sha256"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// NewID is a ULID for a memory written at t: 48 bits of milliseconds, then
// 80 random bits. Ids sort by time, and two processes never collide.
func NewID(t time.Time) string {
	id := stamped(t)
	if _, err := rand.Read(id[6:]); err != nil {
		panic("memory: no randomness for an id: " + err.Error()) // crypto/rand never fails on Linux
	}
	return id.String()
}

// stamped is a ULID whose time part is t (before 1970 counts as 1970) and
// whose other 80 bits are zero.
func stamped(t time.Time) ulid.ULID {
	var id ulid.ULID
	// Clamped into the 48 bits a ULID has for time, SetTime cannot fail.
	_ = id.SetTime(min(uint64(max(t.UnixMilli(), 0)), ulid.MaxTime()))
	return id
}

// legacyID is the id of a line written before memories carried one: a
// ULID whose time part is the memory's timestamp and whose other 80 bits
// are a hash of its day, its text and how many identical lines precede it
// in that day's file. It depends on nothing else in the file, so removing
// or adding other lines never changes it.
func legacyID(t time.Time, day string, text []byte, occurrence int) string {
	h := sha256.New()
	h.Write([]byte(day))
	h.Write([]byte{0})
	h.Write(text)
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(occurrence)))
	id := stamped(t)
	copy(id[6:], h.Sum(nil))
	return id.String()
}

// LegacyRef reports whether ref is an old-style reference, "DAY@OFFSET":
// a day file and the byte offset where the line started when it was
// written.
func LegacyRef(ref string) bool {
	day, off, ok := strings.Cut(ref, "@")
	if !ok || len(day) != len("2006-01-02") {
		return false
	}
	_, err := strconv.ParseInt(off, 10, 64)
	return err == nil
}

// legacyRef is the old-style reference to the line at offset in day.
func legacyRef(day string, offset int64) string {
	return day + "@" + strconv.FormatInt(offset, 10)
}
