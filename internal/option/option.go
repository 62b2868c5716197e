// Package option is the error a kernel's library returns for an option it
// cannot take: which option, as the library names it, and what is wrong
// with its value. Only a command turns the option's name into a flag.
package option

import (
	"fmt"
	"strings"
)

// Error is an option the library cannot take. Its message is the field's
// name and the problem: a problem that begins with "is " reads on from
// the name ("path is required"), any other follows a colon.
type Error struct {
	Field   string // the option, as the library names it ("web_allow")
	Problem string // what is wrong with its value, and what to give instead
	Err     error  // the cause, when there is one
}

func (e *Error) Error() string {
	if strings.HasPrefix(e.Problem, "is ") {
		return e.Field + " " + e.Problem
	}
	return e.Field + ": " + e.Problem
}

// Unwrap is the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf is an Error for field; a %w in format sets its cause.
func Errorf(field, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	e := &Error{Field: field, Problem: err.Error()}
	if u, ok := err.(interface{ Unwrap() error }); ok {
		e.Err = u.Unwrap()
	}
	return e
}
