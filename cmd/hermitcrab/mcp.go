package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/hermitcrab"
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
	return cli.MCPAddCommand("which adds them with set_tools", func(cmd *cobra.Command, srv mcp.Server) (offer mcp.Offer, err error) {
		err = f.withReady(cmd, false, func(k *hermitcrab.Kernel) error {
			offer, err = k.AddMCPServer(cmd.Context(), srv)
			return err
		})
		return offer, err
	})
}

func (f *flags) mcpListCommand() *cobra.Command {
	return cli.MCPListCommand("hermitcrab mcp add NAME URL, or --command", func(*cobra.Command) ([]mcp.Listing, error) {
		dir, err := f.dataDir()
		if err != nil {
			return nil, err
		}
		return mcp.Registry{Path: filepath.Join(dir, hermitcrab.MCPFile)}.List()
	})
}

func (f *flags) mcpRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use: "remove NAME", Short: "Remove an MCP server: the LLM can no longer use its tools", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withReady(cmd, false, func(k *hermitcrab.Kernel) error {
				removed, note, err := k.RemoveMCPServer(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed mcp server %s\n", termtext.Line(removed))
				if note != "" {
					fmt.Fprintln(cmd.OutOrStdout(), "note:", termtext.Line(note))
				}
				return nil
			})
		},
	}
}
