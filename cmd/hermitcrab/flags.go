package main

import (
	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/hermitcrab"
)

// optionFlags names the flag (or argument) that sets each option the
// kernel names in its errors (hermitcrab.OptionError): the one place the
// command turns the library's names into its own.
var optionFlags = map[string]string{
	"data":               "--data",
	"addr":               "--addr",
	"shell_file":         "--shell",
	"web_allow":          "--web-allow",
	"web_deny":           "--web-deny",
	"path":               "ADDRESS",
	"type":               "--type",
	"body":               "BODY",
	"window":             "--window",
	"agent_rate":         "--agent-rate",
	"agent_burst":        "--agent-burst",
	"addr_rate":          "--addr-rate",
	"addr_burst":         "--addr-burst",
	"max_body":           "--max-body",
	"max_savepoint_body": "--max-savepoint-body",
}

// flagError makes an option error the kernel returned as it is (not one
// it wrapped in the context of something else, such as an offer's
// address) a usage error (exit 2) that names the flag; any other error is
// returned as it is.
func flagError(err error) error {
	switch e := err.(type) {
	case *hermitcrab.OptionError:
		if name, ok := optionFlags[e.Field]; ok {
			return cli.Usagef("%s %s", name, e.Problem)
		}
	case interface{ Unwrap() []error }: // errors.Join of the error and a close that went well
		if errs := e.Unwrap(); len(errs) == 1 {
			if mapped := flagError(errs[0]); mapped != errs[0] {
				return mapped
			}
		}
	}
	return err
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
