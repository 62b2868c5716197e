// Package filestat is what lumen compares to know whether a file changed
// without reading it: size, modification time, inode change time and
// inode number. The inode change time moves with every write, rename and
// time setting, and no one can set it: an edit that keeps a file's size
// and puts its modification time back (touch -r, an editor preserving it)
// still changes it. Where the platform has none (Windows) it is 0.
package filestat

import "os"

// Stat is what a stat of a file says (times in unix nanoseconds).
type Stat struct {
	Size, Mtime, Ctime, Ino int64
}

// Of is the Stat of st.
func Of(st os.FileInfo) Stat {
	ctime, ino := change(st)
	return Stat{Size: st.Size(), Mtime: st.ModTime().UnixNano(), Ctime: ctime, Ino: ino}
}

// Changed is the later of the modification and inode change times: a
// Stat recorded within a clock tick of it may not see a change made in
// the same tick (git's "racily clean" files).
func (s Stat) Changed() int64 { return max(s.Mtime, s.Ctime) }
