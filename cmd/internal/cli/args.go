package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// NegativeArgs lets cmd take negative numbers among its positional
// arguments (hermitcrab bsp wake 0.9.6 -2) while it reads flags anywhere on
// the line, before and after the arguments, as every other command does.
// pflag would read -2 as the shorthand flag "2", so cobra's parsing is
// turned off for cmd and done here: "-" followed by a digit or a dot is an
// argument unless it is the value of the flag before it, and "--" ends
// the flags as usual. Call it once cmd's Args, RunE and flags are set.
func NegativeArgs(cmd *cobra.Command) {
	validate, run := cmd.Args, cmd.RunE
	cmd.DisableFlagParsing = true
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(c *cobra.Command, line []string) error {
		c.InheritedFlags() // merges the parents' persistent flags into c.Flags()
		fs := c.Flags()
		flags, args := splitFlags(fs, line)
		if err := fs.Parse(flags); err != nil {
			return Exit(ExitUsage, err)
		}
		if help, _ := fs.GetBool("help"); help { // an error: no help flag, so no help asked
			return c.Help()
		}
		if validate != nil {
			if err := validate(c, args); err != nil {
				return Exit(ExitUsage, err)
			}
		}
		return run(c, args)
	}
}

// splitFlags separates the flags (with their values) from the arguments
// in line, keeping negative numbers as arguments.
func splitFlags(fs *pflag.FlagSet, line []string) (flags, args []string) {
	for i := 0; i < len(line); i++ {
		a := line[i]
		switch {
		case a == "--":
			return flags, append(args, line[i+1:]...)
		case len(a) < 2 || a[0] != '-' || a[1] >= '0' && a[1] <= '9' || a[1] == '.':
			args = append(args, a)
		default:
			flags = append(flags, a)
			if takesValue(fs, a) && i+1 < len(line) {
				i++
				flags = append(flags, line[i])
			}
		}
	}
	return flags, args
}

// takesValue reports whether the flag a (--name or -abc) is one that reads
// the next word as its value: a known flag without an optional value,
// with no value attached (--name=v, -tv).
func takesValue(fs *pflag.FlagSet, a string) bool {
	if strings.Contains(a, "=") {
		return false
	}
	var f *pflag.Flag
	if name, ok := strings.CutPrefix(a, "--"); ok {
		f = fs.Lookup(name)
	} else {
		f = fs.ShorthandLookup(a[len(a)-1:])
	}
	return f != nil && f.NoOptDefVal == ""
}
