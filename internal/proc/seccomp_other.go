//go:build linux && !amd64 && !arm64

package proc

import "errors"

// seccompArch: no filter is written for this processor's system calls.
func seccompArch() uint32 { return 0 }

func refuseUnixSockets() error {
	return errors.New("no seccomp filter for this processor")
}
