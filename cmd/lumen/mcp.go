package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/llm/mcp"
	"github.com/llmkernels/kernels/lumen"
)

func mcpCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{Use: "mcp", Short: "Add, list or remove the MCP servers whose tools the loops may use",
		Long: `An MCP server you add here gives the loops its tools, named NAME__tool (NAME is the
name you give the server). They sit beside the skills: THINK reads them with their
descriptions and input schemas among the skills (the most relevant in full), and
ACT calls the one chosen, recorded as a memory like a skill run. A call is bounded
like a skill run: cancelled after --skill-timeout, and an answer longer than
--skill-output-cap bytes is dropped. What a server answers is outside text
(control characters shown as escapes); a server that is down, slow or answers
garbage makes a failed outcome, and the loop goes on.

The servers are kept with the instance in mcp_servers.json, readable by you only:
it holds their headers and environment values, which are never printed. lumen init
lists that file in .gitignore; an instance made before needs the line added by
hand. A running lumen sees a server added or removed here when it is started
again. See docs/lumen.md, "MCP servers and skills".`}
	cmd.AddCommand(mcpAddCommand(o), mcpListCommand(o), mcpRemoveCommand(o))
	return cmd
}

func mcpAddCommand(o *options) *cobra.Command {
	return cli.MCPAddCommand("beside the skills", func(cmd *cobra.Command, srv mcp.Server) (offer mcp.Offer, err error) {
		in, err := o.openWritable()
		if err != nil {
			return offer, err
		}
		defer func() { err = errors.Join(err, in.Close()) }()
		return in.AddMCPServer(cmd.Context(), srv)
	})
}

func mcpListCommand(o *options) *cobra.Command {
	return cli.MCPListCommand("lumen mcp add NAME URL, or --command", func(*cobra.Command) (list []mcp.Listing, err error) {
		err = o.withInstance(func(in *lumen.Instance) error {
			list, err = in.MCPServers().List()
			return err
		})
		return list, err
	})
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
			removed, err := in.MCPServers().Remove(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed mcp server %s\n", termtext.Line(removed))
			return nil
		},
	}
}
