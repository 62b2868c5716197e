package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/llm/mcp"
	"github.com/llmkernels/kernels/solve"
)

// runMCPFlags are solve run's MCP servers, whose tools claude-code-0 is
// offered during the run.
type runMCPFlags struct {
	urls, commands []string
}

func (r *runMCPFlags) add(f *pflag.FlagSet) {
	f.StringArrayVar(&r.urls, "mcp", nil, "offer claude-code-0 the tools of the MCP server at URL (NAME=URL, streamable HTTP) as NAME__tool when it resolves or verifies (repeatable)")
	f.StringArrayVar(&r.commands, "mcp-command", nil, `the same for the MCP server this command starts (NAME=CMD, stdio, e.g. fs="npx -y @acme/mcp"); needs --unconfined (repeatable)`)
}

// parse reads the flags as the run's servers; a malformed value, or a
// command without --unconfined, is a usage error (exit 2) before anything
// starts.
func (r *runMCPFlags) parse(unconfined bool) ([]solve.RunMCPServer, error) {
	var servers []solve.RunMCPServer
	for _, v := range r.urls {
		srv, err := mcp.ParseFlag(v)
		if err != nil {
			return nil, cli.Usagef("--mcp: %v", err)
		}
		servers = append(servers, solve.RunMCPServer{Name: srv.Name, URL: srv.URL})
	}
	for _, v := range r.commands {
		name, line, ok := strings.Cut(v, "=")
		if !ok {
			return nil, cli.Usagef("--mcp-command %q: write NAME=CMD, e.g. fs=\"npx -y @acme/mcp\"", v)
		}
		command, args, err := mcp.ParseCommand(line)
		if err == nil {
			err = mcp.Server{Name: name, Command: command, Args: args}.Check()
		}
		if err != nil {
			return nil, cli.Usagef("--mcp-command: %v", err)
		}
		if !unconfined {
			return nil, cli.Usagef("--mcp-command %s: solve cannot confine the process an MCP server's command starts; give --unconfined to run it, or give the server by its URL with --mcp", name)
		}
		servers = append(servers, solve.RunMCPServer{Name: name, Command: command, Args: args})
	}
	return servers, nil
}
