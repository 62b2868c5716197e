//go:build linux && (amd64 || arm64)

package proc

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccompArch is the audit architecture of this processor's system calls.
func seccompArch() uint32 {
	if runtime.GOARCH == "arm64" {
		return unix.AUDIT_ARCH_AARCH64
	}
	return unix.AUDIT_ARCH_X86_64
}

// refuseUnixSockets installs a seccomp filter on this thread (inherited by
// what it execs) that refuses socket(AF_UNIX, …) with EACCES, io_uring
// (whose operations open sockets unseen by seccomp) and system calls of
// another architecture (x32, i386) with ENOSYS. Before Landlock ABI 9,
// Landlock cannot stop a connect() to a socket by its path, and a root
// command could reach /var/run/docker.sock or systemd. socketpair() is
// untouched: it reaches no one.
func refuseUnixSockets() error {
	const (
		ld   = 0x20 // BPF_LD | BPF_W | BPF_ABS
		jeq  = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
		jge  = 0x35 // BPF_JMP | BPF_JGE | BPF_K
		ret  = 0x06 // BPF_RET | BPF_K
		arch = 4    // offsetof(struct seccomp_data, arch)
		nr   = 0
		arg0 = 16 // args[0], its low 32 bits on a little-endian processor
	)
	filter := []unix.SockFilter{
		{Code: ld, K: arch},
		{Code: jeq, Jt: 0, Jf: 6, K: seccompArch()}, // another architecture: 8
		{Code: ld, K: nr},
		{Code: jge, Jt: 4, Jf: 0, K: 0x40000000}, // x32: 8
		{Code: jeq, Jt: 0, Jf: 2, K: unix.SYS_SOCKET},
		{Code: ld, K: arg0},
		{Code: jeq, Jt: 2, Jf: 3, K: unix.AF_UNIX}, // AF_UNIX: 9, else 10
		{Code: jeq, Jt: 1, Jf: 2, K: unix.SYS_IO_URING_SETUP},
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	return unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0)
}
