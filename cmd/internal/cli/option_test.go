package cli

import (
	"errors"
	"fmt"
	"testing"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/internal/option"
)

// An option error the kernel returned as it is becomes a usage error
// naming the flag, in every subcommand and in PreRunE; one wrapped in
// another's context, or of a field without a flag, is left as it is.
func TestOptionFlagsNameTheFlag(t *testing.T) {
	var got error
	root := &cobra.Command{Use: "k"}
	sub := &cobra.Command{Use: "run", RunE: func(*cobra.Command, []string) error { return got }}
	pre := &cobra.Command{Use: "pre", PreRunE: func(*cobra.Command, []string) error { return got }, RunE: func(*cobra.Command, []string) error { return nil }}
	root.AddCommand(sub, pre)
	OptionFlags(root, map[string]string{"budget_usd": "--budget"})
	for _, tc := range []struct {
		err   error
		want  string
		usage bool
	}{
		{option.Errorf("budget_usd", "%v: give a positive amount", -1), "--budget -1: give a positive amount", true},
		{errors.Join(option.Errorf("budget_usd", "is empty")), "--budget is empty", true},
		{fmt.Errorf("run x: %w", option.Errorf("budget_usd", "bad")), "run x: budget_usd: bad", false},
		{option.Errorf("other", "bad"), "other: bad", false},
	} {
		for _, c := range []*cobra.Command{sub, pre} {
			got = tc.err
			run := c.RunE
			if c == pre {
				run = c.PreRunE
			}
			err := run(c, nil)
			if status := StatusOf(&runError{err}); err.Error() != tc.want || (status == ExitUsage) != tc.usage {
				t.Errorf("%s %v: %q exit %d", c.Use, tc.err, err, status)
			}
		}
	}
}
