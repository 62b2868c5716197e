package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// NegativeArgs reads flags anywhere, the parents' too, with their values,
// and keeps negative numbers as arguments.
func TestNegativeArgsReadsFlagsAnywhereAndKeepsNegativeNumbers(t *testing.T) {
	run := func(args ...string) (int, string, string) {
		app := New("kernel", "test", "test")
		var data string
		var n int
		var asJSON *bool
		app.Root.PersistentFlags().StringVar(&data, "data", "", "a directory")
		cmd := &cobra.Command{Use: "bsp NAME [SPINDLE [POINT]]", Args: cobra.RangeArgs(1, 3),
			RunE: func(cmd *cobra.Command, args []string) error {
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "data=%s n=%d json=%v args=%s", data, n, *asJSON, strings.Join(args, ","))
				return err
			}}
		cmd.Flags().IntVarP(&n, "num", "n", 0, "a number")
		asJSON = JSONFlag(cmd)
		NegativeArgs(cmd)
		app.Root.AddCommand(cmd)
		var out, errOut strings.Builder
		app.Root.SetOut(&out)
		app.Root.SetErr(&errOut)
		status := app.Execute(context.Background(), args)
		return status, out.String(), errOut.String()
	}
	for line, want := range map[string]string{
		"bsp wake 0.9.6 -2 --data d --json":    "data=d n=0 json=true args=wake,0.9.6,-2",
		"--data d bsp wake -2":                 "data=d n=0 json=false args=wake,-2",
		"bsp -n -3 wake -.5 --data=d":          "data=d n=-3 json=false args=wake,-.5",
		"bsp -n=4 wake 0.1 -- --json":          "data= n=4 json=false args=wake,0.1,--json",
		"bsp wake --num -1 -1 --json=false -d": "", // -d is no flag
		"bsp":                                  "",
		"bsp a b c d":                          "",
		"bsp wake --data":                      "",
	} {
		status, out, stderr := run(strings.Fields(line)...)
		if want == "" {
			if status != ExitUsage || !strings.Contains(stderr, "Run 'kernel bsp --help'") {
				t.Errorf("%s: status %d, stderr %q; want a usage error", line, status, stderr)
			}
			continue
		}
		if status != ExitOK || out != want {
			t.Errorf("%s: status %d, %q (stderr %q); want %q", line, status, out, stderr, want)
		}
	}
	if status, out, _ := run("bsp", "--help"); status != ExitOK || !strings.Contains(out, "--num") {
		t.Errorf("bsp --help: status %d\n%s", status, out)
	}
}
