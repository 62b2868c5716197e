package cli

import (
	"errors"

	"github.com/llmkernels/kernels/internal/option"
)

// optionFlag speaks of an option error a kernel returned as it is (not one
// it wrapped in the context of something else, such as a resumed run) in
// the command's terms: a usage error (exit 2) naming the flag or argument
// that flags gives for the option. Any other error, and an option no flag
// sets, is returned as it is.
func optionFlag(err error, flags map[string]string) error {
	switch e := err.(type) {
	case *option.Error:
		if name, ok := flags[e.Field]; ok {
			return Exit(ExitUsage, errors.New(name+" "+e.Problem))
		}
	case interface{ Unwrap() []error }: // errors.Join of the error and a close that went well
		if errs := e.Unwrap(); len(errs) == 1 {
			if mapped := optionFlag(errs[0], flags); mapped != errs[0] {
				return mapped
			}
		}
	}
	return err
}
