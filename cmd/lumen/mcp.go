package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/internal/cli"
	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/lumen"
)

func mcpCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{Use: "mcp", Short: "Add, list or remove MCP servers (stored; the loops do not use their tools yet)",
		Long: `An MCP server you add here is checked (it must answer and list its tools) and kept
with the instance in mcp_servers.json, readable by you only: it holds the servers'
headers and environment values, which are never printed. lumen init lists that
file in .gitignore; an instance made before needs the line added by hand.

Not built yet: the loops do not offer these tools to the model. THINK, DECIDE and
ACT use skills only. See docs/lumen.md, "MCP servers and skills".`}
	cmd.AddCommand(mcpAddCommand(o), mcpListCommand(o), mcpRemoveCommand(o))
	return cmd
}

func mcpAddCommand(o *options) *cobra.Command {
	var add *cli.MCPAddFlags
	cmd := &cobra.Command{
		Use:   "add NAME [URL]",
		Short: "Add an MCP server: at a URL (streamable HTTP), or a command run over stdio",
		Long:  "Add an MCP server, check that it answers and list its tools. " + cli.MCPAddHelp,
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			srv, err := add.Server(cmd, args)
			if err != nil {
				return err
			}
			in, err := o.openWritable()
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, in.Close()) }()
			offer, err := in.AddMCPServer(cmd.Context(), srv)
			if err != nil {
				return cli.MCPAddError(err)
			}
			cli.PrintMCPAdded(cmd.OutOrStdout(), srv, offer, "once the loops use them (not built yet)")
			return nil
		},
	}
	add = cli.AddMCPFlags(cmd)
	return cmd
}

func mcpListCommand(o *options) *cobra.Command {
	var asJSON *bool
	cmd := &cobra.Command{
		Use: "list", Short: "List the MCP servers added, without their secrets", Args: cobra.NoArgs,
		Long: cli.MCPListHelp,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withInstance(func(in *lumen.Instance) error {
				list, err := in.MCPServers().List()
				if err != nil {
					return err
				}
				return cli.PrintMCPList(cmd.OutOrStdout(), list, *asJSON, "lumen mcp add NAME URL, or --command")
			})
		},
	}
	asJSON = cli.JSONFlag(cmd)
	return cmd
}

func mcpRemoveCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use: "remove NAME", Short: "Remove an MCP server", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			in, err := o.openWritable()
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, in.Close()) }()
			if err := in.MCPServers().Remove(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed mcp server %s\n", termtext.Line(args[0]))
			return nil
		},
	}
}
