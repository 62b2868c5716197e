package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/lumen"
)

// optionFlags names the flag (or argument) that sets each option the
// kernel names in its errors (lumen.OptionError): the one place the
// command turns the library's names into its own.
var optionFlags = map[string]string{
	"dir":              "--dir",
	"python":           "--python",
	"skill_timeout":    "--skill-timeout",
	"skill_output_cap": "--skill-output-cap",
	"reflect_every":    "--reflect-every",
	"client":           "--provider",
	"prices":           "--prices",
	"cycles":           "--cycles",
	"interval":         "--interval",
	"for":              "--for",
	"backoff":          "--backoff",
	"max_cost":         "--max-cost",
	"max_cost_day":     "--max-cost-day",
	"author":           "--author",
	"date":             "--date",
	"query":            "QUERY",
	"limit":            "--limit",
	"status":           "--status",
	"year":             "--year",
}

// flagError speaks of what the kernel returned in the command's terms:
// an option error (returned as it is, not wrapped in another's context)
// is a usage error (exit 2) naming the flag; an instance missing or not
// writable says which commands and flags to use. Any other error is
// returned as it is.
func flagError(o *options, err error) error {
	var noInstance *lumen.NoInstanceError
	var notWritable *lumen.NotWritableError
	if mapped := cli.FlagOf(err, optionFlags); mapped != err {
		return mapped
	}
	if e, ok := err.(*lumen.OptionError); ok { // a field no flag sets: still the invocation's
		return cli.Usagef("%v", e)
	}
	switch {
	case errors.As(err, &noInstance):
		return fmt.Errorf("no lumen instance at %s (data/ is missing): run `lumen init --dir %s` first, or pass --dir", noInstance.Dir, o.dir)
	case errors.As(err, &notWritable):
		return fmt.Errorf("open %s for writing: read-only: this user cannot create files in %s (%v): the read commands (status, memory, values, goals, skills, audit) work on it as it is; "+
			"chat, run, reflect, audit --judge and skills restore write to it, so they need an instance this user can write (a copy: cp -r or git clone)",
			notWritable.Root, notWritable.Dir, notWritable.Err)
	}
	return err
}

// mapOptionErrors makes every command under c answer in its own terms
// (flagError).
func mapOptionErrors(c *cobra.Command, o *options) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error { return flagError(o, run(cmd, args)) }
	}
	for _, sub := range c.Commands() {
		mapOptionErrors(sub, o)
	}
}
