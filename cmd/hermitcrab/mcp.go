package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/hermitcrab"
	"github.com/llmkernels/kernels/internal/cli"
	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/llm/mcp"
)

func (f *flags) mcpCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "mcp", Short: "Add, list or remove the MCP servers whose tools the LLM may use",
		Long: `An MCP server you add here gives the instance its tools, named NAME__tool (NAME is
the name you give the server). They are not sent with every call: the capabilities block
names them at 0.9, and the LLM adds those it needs with set_tools, as it does its other
tools. What a server answers reaches the LLM as outside text (control characters shown
as escapes); a server that is down, slow or answers garbage gives the LLM an error
result, and the wake goes on. A call that does not answer within --mcp-call-timeout is
cancelled. With --mcp-connector (and --provider anthropic), Anthropic's API calls the
servers at https URLs itself (the MCP connector, beta): their answers then reach the model
without passing through the kernel.

The servers are kept in the data directory (mcp_servers.json, readable by you only: it
holds their headers and environment values, which are never printed). A running
'hermitcrab serve' sees a server added or removed here when it is started again.
See docs/hermitcrab.md, "MCP servers and skills".`}
	cmd.AddCommand(f.mcpAddCommand(), f.mcpListCommand(), f.mcpRemoveCommand())
	return cmd
}

func (f *flags) mcpAddCommand() *cobra.Command {
	var add *cli.MCPAddFlags
	cmd := &cobra.Command{
		Use:   "add NAME [URL]",
		Short: "Add an MCP server: at a URL (streamable HTTP), or a command run over stdio",
		Long:  "Add an MCP server, check that it answers and list its tools. " + cli.MCPAddHelp,
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			srv, err := add.Server(cmd, args)
			if err != nil {
				return err
			}
			return f.withReady(cmd, false, func(k *hermitcrab.Kernel) error {
				offer, err := k.AddMCPServer(cmd.Context(), srv)
				if err != nil {
					return cli.MCPAddError(err)
				}
				cli.PrintMCPAdded(cmd.OutOrStdout(), srv, offer, "which adds them with set_tools")
				return nil
			})
		},
	}
	add = cli.AddMCPFlags(cmd)
	return cmd
}

func (f *flags) mcpListCommand() *cobra.Command {
	var asJSON *bool
	cmd := &cobra.Command{
		Use: "list", Short: "List the MCP servers added, without their secrets", Args: cobra.NoArgs,
		Long: cli.MCPListHelp,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := f.dataDir()
			if err != nil {
				return err
			}
			list, err := mcp.Registry{Path: filepath.Join(dir, hermitcrab.MCPFile)}.List()
			if err != nil {
				return err
			}
			return cli.PrintMCPList(cmd.OutOrStdout(), list, *asJSON, "hermitcrab mcp add NAME URL, or --command")
		},
	}
	asJSON = cli.JSONFlag(cmd)
	return cmd
}

func (f *flags) mcpRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use: "remove NAME", Short: "Remove an MCP server: the LLM can no longer use its tools", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withReady(cmd, false, func(k *hermitcrab.Kernel) error {
				note, err := k.RemoveMCPServer(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed mcp server %s\n", termtext.Line(args[0]))
				if note != "" {
					fmt.Fprintln(cmd.OutOrStdout(), "note:", termtext.Line(note))
				}
				return nil
			})
		},
	}
}
