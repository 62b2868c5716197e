package cli

import (
	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/internal/option"
)

// OptionFlags makes every command under c answer an option error a
// kernel returned as it is (not one it wrapped in the context of
// something else) with a usage error (exit 2) naming the flag (or
// argument) that flags gives for the option's field. An error of a field
// flags does not name, and any other error, is returned as it is.
func OptionFlags(c *cobra.Command, flags map[string]string) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error { return FlagOf(run(cmd, args), flags) }
	}
	if pre := c.PreRunE; pre != nil {
		c.PreRunE = func(cmd *cobra.Command, args []string) error { return FlagOf(pre(cmd, args), flags) }
	}
	for _, sub := range c.Commands() {
		OptionFlags(sub, flags)
	}
}

// FlagOf is err as OptionFlags answers it: an option error the kernel
// returned as it is, of a field flags names, becomes a usage error naming
// the flag; anything else is err.
func FlagOf(err error, flags map[string]string) error {
	switch e := err.(type) {
	case *option.Error:
		if name, ok := flags[e.Field]; ok {
			return Usagef("%s %s", name, e.Problem)
		}
	case interface{ Unwrap() []error }: // errors.Join of the error and a close that went well
		if errs := e.Unwrap(); len(errs) == 1 {
			if mapped := FlagOf(errs[0], flags); mapped != errs[0] {
				return mapped
			}
		}
	}
	return err
}
