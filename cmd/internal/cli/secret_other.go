//go:build !linux

package cli

import (
	"errors"
	"os"
)

// noEcho is not built for this system: the secret is read with echo on,
// and ReadSecretLine says so.
func noEcho(*os.File) (func(), error) {
	return nil, errors.New("turning terminal echo off is only built for Linux")
}
