package memory

import (
	"os"
	"syscall"
)

// changeStat is a file's inode change time (unix nanoseconds) and inode
// number. The change time moves with every write, rename and time
// setting, and no one can set it: an edit that keeps a file's size and
// puts its modification time back still changes it.
func changeStat(st os.FileInfo) (ctime, ino int64) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Ctim.Nano(), int64(s.Ino)
	}
	return 0, 0
}
