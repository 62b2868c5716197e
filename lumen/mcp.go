package lumen

import (
	"context"
	"path/filepath"

	"github.com/llmkernels/kernels/llm/mcp"
)

// MCPFile holds the MCP servers the person added, in the instance root:
// JSON, mode 0600, since headers and environment values are secrets.
const MCPFile = "mcp_servers.json"

// MCPServers is the registry of the person's MCP servers (lumen mcp add,
// list, remove). The loops do not offer their tools to the model yet.
func (in *Instance) MCPServers() mcp.Registry {
	return mcp.Registry{Path: filepath.Join(in.Root, MCPFile)}
}

// AddMCPServer checks srv, connects to it and lists its tools, and only
// then stores it (mcp.Registry.Add). A malformed server is an
// *mcp.InvalidError, one that does not answer an *mcp.UnreachableError;
// neither is stored.
func (in *Instance) AddMCPServer(ctx context.Context, srv mcp.Server) (mcp.Offer, error) {
	return in.MCPServers().Add(ctx, srv, mcp.Options{})
}
