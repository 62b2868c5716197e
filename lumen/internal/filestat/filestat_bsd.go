//go:build darwin || freebsd || netbsd || openbsd

package filestat

import (
	"os"
	"syscall"
)

func change(st os.FileInfo) (ctime, ino int64) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Ctimespec.Nano(), int64(s.Ino)
	}
	return 0, 0
}
