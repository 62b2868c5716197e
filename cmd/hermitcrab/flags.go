package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/hermitcrab"
	"github.com/llmkernels/kernels/internal/cli"
)

// optionFlags names the flag (or argument) that sets each option the
// kernel names in its errors (hermitcrab.OptionError): the one place the
// command turns the library's names into its own.
var optionFlags = map[string]string{
	"path":       "ADDRESS",
	"shell_file": "--shell",
	"web_allow":  "--web-allow",
	"web_deny":   "--web-deny",
}

// flagError makes an option error a usage error (exit 2) that names the
// flag; any other error is returned as it is.
func flagError(err error) error {
	e, ok := errors.AsType[*hermitcrab.OptionError](err)
	if !ok {
		return err
	}
	name, ok := optionFlags[e.Field]
	if !ok {
		return err
	}
	return cli.Usagef("%s %s", name, e.Problem)
}

// mapOptionErrors makes every command under c answer an option error with
// its flag (flagError).
func mapOptionErrors(c *cobra.Command) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error { return flagError(run(cmd, args)) }
	}
	for _, sub := range c.Commands() {
		mapOptionErrors(sub)
	}
}
