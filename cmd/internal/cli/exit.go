package cli

import (
	"errors"
	"fmt"
)

// Exit statuses, the same in all three CLIs (docs/configuration.md).
const (
	ExitOK         = 0 // the command did what it was asked
	ExitFailure    = 1 // it failed: the message on stderr says why
	ExitUsage      = 2 // the command line was wrong: unknown command or flag, bad flag value, wrong arguments
	ExitInfeasible = 3 // solve run: the goal cannot be achieved within its constraints
	ExitWaiting    = 4 // solve run: the run waits for a human (answer with solve hire, then solve resume)
	ExitStopped    = 5 // stopped before the end by a limit or a signal; the work can be resumed
)

// ExitError is an error that ends the command with a given exit status.
// Err is what is printed on stderr; with Err nil nothing is printed (the
// command has already said what happened on stdout).
type ExitError struct {
	Status int
	Err    error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Status)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Exit returns an error that ends the command with status, printing err
// (nothing when err is nil).
func Exit(status int, err error) error { return &ExitError{Status: status, Err: err} }

// Usagef is a usage error (status 2) for a mistake on the command line that
// only the command can see, such as a flag value it parses itself.
func Usagef(format string, args ...any) error {
	return Exit(ExitUsage, fmt.Errorf(format, args...))
}

// usageMarked is an error that a package below this one (which cannot
// return Usagef without importing it) marks as the command line's fault:
// internal/provider's *FlagError. It exits 2 like Usagef.
type usageMarked interface {
	error
	UsageError() bool
}

// runError marks an error returned by a command's own RunE, as against one
// cobra returned while parsing the command line (a usage error).
type runError struct{ err error }

func (e *runError) Error() string { return e.err.Error() }
func (e *runError) Unwrap() error { return e.err }

// StatusOf is the exit status for err, the result of executing a command
// line: 0 for nil, the status of an ExitError, 1 for any other error a
// command returned, and 2 for an error cobra returned before the command
// ran (unknown command or flag, bad flag value, wrong number of arguments,
// missing required flag) or that is marked as a usage error (an unknown
// --provider, found only when the command builds its client).
func StatusOf(err error) int {
	if err == nil {
		return ExitOK
	}
	if e, ok := errors.AsType[*ExitError](err); ok {
		return e.Status
	}
	if u, ok := errors.AsType[usageMarked](err); ok && u.UsageError() {
		return ExitUsage
	}
	if _, ok := errors.AsType[*runError](err); ok {
		return ExitFailure
	}
	return ExitUsage
}
