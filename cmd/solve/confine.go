package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/solve"
)

// commandsRun names, in flag help and notes, the code a run starts.
const commandsRun = "commands (checks, plan steps, built and hired tools)"

// sandboxFlags adds --unconfined and the resource limits to a command that
// runs a SOLVE loop.
func sandboxFlags(cmd *cobra.Command) *cli.ConfineFlags {
	return cli.AddConfineFlags(cmd.Flags(), commandsRun)
}

// sandboxOf is the sandbox the flags ask for; it says once on stderr when
// the commands will be refused (no confinement here) or run unconfined.
func sandboxOf(cmd *cobra.Command, f *cli.ConfineFlags) (solve.Sandbox, error) {
	l, err := f.Limits()
	if err != nil {
		return solve.Sandbox{}, err
	}
	f.Refuse(cmd.ErrOrStderr(), commandsRun, solve.Confinement())
	if f.Unconfined {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: --unconfined: %s run with your user's rights; each one's output records it\n", commandsRun)
	}
	return solve.Sandbox{Unconfined: f.Unconfined, Limits: l}, nil
}

// printConfinement ends solve status: how commands are confined here.
func printConfinement(w io.Writer) {
	fmt.Fprintf(w, "confinement of commands on this machine: %s\n", solve.ConfinementText())
}

// allowCommand is solve resolvers allow ID --network.
func allowCommand() *cobra.Command {
	var (
		db      string
		network bool
	)
	cmd := &cobra.Command{
		Use:   "allow ID --network",
		Short: "Let a built tool reach the network it declares (recorded in the registry; every later run of it)",
		Long: `A built tool runs confined and without network. When its answer declared a
need ("network": ["api.example.org:443"], or "all"), 'solve resolvers' lists it;
this allows it, once: the allowance is recorded with the tool and shown in the
listing. Only the ports are enforced (TCP connect to those ports, on any host):
see docs/configuration.md. A hired command is allowed with solve hire REQUEST
--resolver-command CMD --allow-network.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !network {
				return cli.Usagef("allow %s: say what to allow: --network", args[0])
			}
			return withKernel(cmd.Context(), db, false, func(k *solve.Kernel) error {
				a, err := k.AllowNetwork(cmd.Context(), args[0])
				if errors.Is(err, solve.ErrNoNetworkDeclared) {
					return reworded(err, solve.ErrNoNetworkDeclared, "it declares no network need, so there is nothing to allow (a hired command is allowed with solve hire REQUEST --resolver-command CMD --allow-network)")
				}
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), termtext.Line(fmt.Sprintf("resolver %s may now reach %s", a.Resolver, strings.Join(a.Network, ", "))))
				return nil
			})
		},
	}
	dbFlag(cmd, &db)
	cmd.Flags().BoolVar(&network, "network", false, "allow the network the tool declares")
	return cmd
}

// allowNetworkFlag parses hire's --allow-network value: all (the flag
// alone) or host:port entries.
func allowNetworkFlag(v string) []string {
	if v == "" {
		return nil
	}
	var out []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}
