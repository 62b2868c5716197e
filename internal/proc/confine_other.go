//go:build !linux

package proc

import "runtime"

// Probe says what confinement this machine gives: none, off Linux.
func Probe() Support {
	return Support{Reason: "confinement needs Linux (Landlock and namespaces); this is " + runtime.GOOS}
}

// confined is never made off Linux.
type confined struct{}

func prepare(*Cmd, string) (*confined, error) { return nil, &UnavailableError{Reason: Probe().Reason} }

func (*confined) environ() []string  { return nil }
func (*confined) outputLimit() int64 { return 0 }
func (*confined) finish(*Result)     {}

func limitOf(string, int) string { return "" }
