// Package dayfilestest writes memory lines in bulk, as the tests and
// benchmarks that generate long-lived instances need: one buffered writer
// per day file (DIR/YYYY/YYYY-MM-DD.jsonl, the layout lumen/memory reads),
// flushed and closed by Close. The kernel itself appends line by line
// under a lock (memory.Store.Append); these files are written by one
// writer before anything reads them.
package dayfilestest

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
)

// Writer writes the day files under one directory.
type Writer struct {
	dir     string
	files   map[string]*bufio.Writer
	handles []*os.File
}

// New writes day files under dir (data/memory of an instance).
func New(dir string) *Writer { return &Writer{dir: dir, files: map[string]*bufio.Writer{}} }

// Write appends v, encoded as one JSON line, to the file of day
// (YYYY-MM-DD), creating it (and its year's directory) at its first line.
func (w *Writer) Write(day string, v any) error {
	bw, ok := w.files[day]
	if !ok {
		path := filepath.Join(w.dir, day[:4], day+".jsonl")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		w.handles = append(w.handles, f)
		bw = bufio.NewWriterSize(f, 64<<10)
		w.files[day] = bw
	}
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = bw.Write(append(line, '\n'))
	return err
}

// Close flushes and closes every file.
func (w *Writer) Close() error {
	var errs []error
	for _, bw := range w.files {
		errs = append(errs, bw.Flush())
	}
	for _, f := range w.handles {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}
