package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/llmkernels/kernels/internal/proc"
)

// TestConfineFlags pins the limits the flags give (defaults, sizes with
// units) and that a value that means nothing is a usage error.
func TestConfineFlags(t *testing.T) {
	parse := func(args ...string) (proc.Limits, error) {
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		f := AddConfineFlags(fs, "skills")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return f.Limits()
	}
	if l, err := parse(); err != nil || l != proc.DefaultLimits {
		t.Fatalf("defaults: %+v %v", l, err)
	}
	l, err := parse("--memory-limit", "512MiB", "--output-limit", "64KiB", "--process-limit", "9", "--cpu-limit", "2s", "--open-files-limit", "64")
	if err != nil || l.Memory != 512<<20 || l.Output != 64<<10 || l.Processes != 9 || l.CPU.Seconds() != 2 || l.OpenFiles != 64 {
		t.Fatalf("given: %+v %v", l, err)
	}
	for _, bad := range [][]string{{"--memory-limit", "12"}, {"--memory-limit", "4GB"}, {"--output-limit", "-1"}, {"--process-limit", "0"}, {"--cpu-limit", "10ms"}, {"--open-files-limit", "3"}} {
		_, err := parse(bad...)
		if StatusOf(err) != 2 || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%v: %v (status %d); want a usage error naming the flag", bad, err, StatusOf(err))
		}
	}
}

// TestRefuseSaysWhyOnce pins the note where confinement is not available:
// it names the reason and --unconfined; nothing where it is available or
// the person chose --unconfined.
func TestRefuseSaysWhyOnce(t *testing.T) {
	off := proc.Support{Reason: "confinement needs Linux (Landlock and namespaces); this is darwin"}
	for _, tc := range []struct {
		s          proc.Support
		unconfined bool
		want       string
	}{
		{off, false, "note: confinement is not available here (confinement needs Linux (Landlock and namespaces); this is darwin): skills will not run unless you pass --unconfined"},
		{off, true, ""},
		{proc.Support{Available: true}, false, ""},
	} {
		var b strings.Builder
		f := &ConfineFlags{Unconfined: tc.unconfined}
		f.Refuse(&b, "skills", tc.s)
		if !strings.HasPrefix(b.String(), tc.want) || (tc.want == "") != (b.Len() == 0) || strings.Count(b.String(), "\n") > 1 {
			t.Errorf("%+v unconfined=%v: %q", tc.s, tc.unconfined, b.String())
		}
	}
}
