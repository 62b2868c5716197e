package memory

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"strings"
	"time"
)

// crockford is the ULID alphabet (Crockford's base32: no I, L, O, U).
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// encodeULID writes 128 bits as the 26 characters of a ULID: the first
// character carries the top 3 bits, each following one 5 bits.
func encodeULID(b [16]byte) string {
	hi := binary.BigEndian.Uint64(b[:8])
	lo := binary.BigEndian.Uint64(b[8:])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// NewID is a ULID for a memory written at t: 48 bits of milliseconds, then
// 80 random bits. Ids sort by time, and two processes never collide.
func NewID(t time.Time) string {
	var b [16]byte
	putMillis(&b, t)
	if _, err := rand.Read(b[6:]); err != nil {
		panic("memory: no randomness for an id: " + err.Error()) // crypto/rand never fails on Linux
	}
	return encodeULID(b)
}

func putMillis(b *[16]byte, t time.Time) {
	ms := uint64(max(t.UnixMilli(), 0))
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
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
	var b [16]byte
	putMillis(&b, t)
	copy(b[6:], h.Sum(nil))
	return encodeULID(b)
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
