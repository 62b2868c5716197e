package solve

import (
	"github.com/llmkernels/kernels/llm/mcp"
	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/resolver/mcptool"
)

// MCPTool is a tool of an MCP server hired as a resolver (HireAnswer.MCP).
type MCPTool = loop.MCPTool

// MCPServerName prefixes the tool names an MCP server hired for a
// capability offers (NAME__tool).
const MCPServerName = mcptool.ServerName

// MCPServer is how the kernel reaches t's server: to list its tools
// before hiring one (mcp.Probe), as a run will.
func MCPServer(t MCPTool) mcp.Server { return mcptool.Server(t) }
