package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// testApp is a CLI with one command of each kind the kernels have.
func testApp() *App {
	app := New("kernel", "test", "test")
	var n int
	show := &cobra.Command{Use: "show NAME", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "missing" {
				return fmt.Errorf("block %q not found", args[0])
			}
			if strings.HasPrefix(args[0], "model:") {
				return fmt.Errorf("the answer was not JSON: %s", args[0]) // quoting what the model said
			}
			if n < 0 {
				return Usagef("--n %d: give 0 or more", n)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "shown", args[0])
			return err
		}}
	show.Flags().IntVar(&n, "n", 0, "a number")
	var required string
	needs := &cobra.Command{Use: "needs", Args: cobra.NoArgs, RunE: func(*cobra.Command, []string) error { return nil }}
	needs.Flags().StringVar(&required, "it", "", "required")
	if err := needs.MarkFlagRequired("it"); err != nil {
		panic(err)
	}
	group := &cobra.Command{Use: "blocks", Short: "a group"}
	group.AddCommand(show)
	outcome := &cobra.Command{Use: "outcome STATUS", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch args[0] {
			case "infeasible":
				return Exit(ExitInfeasible, nil)
			case "waiting":
				return Exit(ExitWaiting, errors.New("2 requests wait for a human"))
			}
			return nil
		}}
	wait := &cobra.Command{Use: "wait", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "resolving")
			<-cmd.Context().Done()
			return fmt.Errorf("resolving node 3: %w", cmd.Context().Err())
		}}
	serve := &cobra.Command{Use: "serve", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "serving")
			<-cmd.Context().Done()
			return nil // a server's normal end
		}}
	stubborn := &cobra.Command{Use: "stubborn", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "ignoring signals")
			time.Sleep(time.Hour)
			return nil
		}}
	hello := &cobra.Command{Use: "hello", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "hello") // unchecked, as most printing is
			return nil
		}}
	app.Root.AddCommand(group, needs, outcome, wait, serve, stubborn, hello)
	return app
}

func TestExitStatuses(t *testing.T) {
	cases := []struct {
		args   []string
		status int
		stderr string // a fragment of stderr; "" means stderr is empty
	}{
		{[]string{"blocks", "show", "purpose"}, ExitOK, ""},
		{[]string{"blocks", "show", "missing"}, ExitFailure, `kernel: block "missing" not found`},
		// An error that quotes the model reaches the terminal inert.
		{[]string{"blocks", "show", "model:\x1b]0;pwned\x07\x1b[2J"}, ExitFailure, `kernel: the answer was not JSON: model:\x1b]0;pwned\a\x1b[2J` + "\n"},
		{[]string{"blocks", "show"}, ExitUsage, "accepts 1 arg(s), received 0\nRun 'kernel blocks show --help' for usage."},
		{[]string{"blocks", "show", "a", "b"}, ExitUsage, "accepts 1 arg(s), received 2"},
		{[]string{"blocks", "show", "a", "--bogus"}, ExitUsage, "unknown flag: --bogus"},
		{[]string{"blocks", "show", "a", "--n", "x"}, ExitUsage, `invalid argument "x" for "--n"`},
		{[]string{"blocks", "show", "a", "--n", "-1"}, ExitUsage, "--n -1: give 0 or more"},
		{[]string{"blocks", "shwo"}, ExitUsage, `unknown command "shwo" for "kernel blocks"`},
		{[]string{"blcks"}, ExitUsage, `unknown command "blcks" for "kernel"`},
		{[]string{"needs"}, ExitUsage, `required flag(s) "it" not set`},
		// A provider the flags cannot describe is a command-line mistake,
		// though only the command building its client finds it, and so is
		// a script file that is not there; one that cannot be read is not.
		{[]string{"ping", "--provider", "gemini"}, ExitUsage, "kernel: unknown --provider \"gemini\" (choose anthropic, openai, script)\nRun 'kernel ping --help' for usage."},
		{[]string{"ping", "--provider", "script"}, ExitUsage, "--provider script needs --script FILE"},
		{[]string{"ping", "--provider", "openai", "--beta", "x"}, ExitUsage, "--beta is an Anthropic header"},
		{[]string{"ping", "--provider", "script", "--script", "/nonexistent/script.json"}, ExitUsage, "--script /nonexistent/script.json: no such file"},
		{[]string{"ping", "--provider", "script", "--script", "/"}, ExitFailure, "/"},
		{[]string{"outcome", "infeasible"}, ExitInfeasible, ""},
		{[]string{"outcome", "waiting"}, ExitWaiting, "kernel: 2 requests wait for a human"},
		{[]string{"blocks"}, ExitOK, ""},
		{[]string{"--help"}, ExitOK, ""},
		{[]string{"--version"}, ExitOK, ""},
	}
	for _, c := range cases {
		status, _, stderr := execute(t, context.Background(), c.args...)
		if status != c.status {
			t.Errorf("%v: exit status %d, want %d (stderr %q)", c.args, status, c.status, stderr)
		}
		if c.stderr == "" && stderr != "" || !strings.Contains(stderr, c.stderr) {
			t.Errorf("%v: stderr %q, want %q", c.args, stderr, c.stderr)
		}
	}
}

func TestACommandFailingAfterASignalExitsStopped(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&stoppedBy{"SIGTERM"})
	status, _, stderr := execute(t, ctx, "wait")
	if status != ExitStopped || stderr != "kernel: stopped by SIGTERM: resolving node 3: context canceled\n" {
		t.Fatalf("status %d, stderr %q", status, stderr)
	}
	// Cancelled for another reason, the same failure is a failure.
	plain, stop := context.WithCancel(context.Background())
	stop()
	if status, _, _ := execute(t, plain, "wait"); status != ExitFailure {
		t.Fatalf("status %d after a plain cancel, want %d", status, ExitFailure)
	}
}

func TestStatusOfLooksThroughWrapping(t *testing.T) {
	err := fmt.Errorf("run: %w", Exit(ExitWaiting, errors.New("x")))
	if StatusOf(err) != ExitWaiting || StatusOf(nil) != ExitOK || StatusOf(&runError{errors.New("x")}) != ExitFailure ||
		StatusOf(errors.New("from cobra")) != ExitUsage {
		t.Fatal("StatusOf")
	}
	if Exit(ExitInfeasible, nil).Error() != "exit status 3" {
		t.Fatal(Exit(ExitInfeasible, nil).Error())
	}
}

func TestVersionFlagPrintsTheBuild(t *testing.T) {
	status, out, _ := execute(t, context.Background(), "--version")
	if status != ExitOK || !strings.HasPrefix(out, "kernel ") || !strings.Contains(out, "go1.") {
		t.Fatalf("status %d, stdout %q", status, out)
	}
	status, out, _ = execute(t, context.Background(), "--help")
	if status != ExitOK || !strings.Contains(out, "--version") {
		t.Fatalf("--help does not list --version:\n%s", out)
	}
}
