package anthropic

import (
	"slices"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/llmkernels/kernels/llm"
)

// toolBetas maps each server tool version that this SDK (v1.84.0) has only
// on its beta surface (anthropic.BetaToolUnionParam, not
// anthropic.ToolUnionParam) to the anthropic-beta value of the same date
// among the SDK's AnthropicBeta constants.
//
// Every other version needs no beta header: the generally available
// Messages API of this SDK (MessageNewParams, whose Messages.New sends no
// anthropic-beta) types web_search_20250305/20260209/20260318,
// web_fetch_20250910/20260209/20260309/20260318,
// code_execution_20250522/20250825/20260120/20260521, bash_20250124,
// text_editor_20250124/20250429/20250728, memory_20250818, the
// tool_search_tool_*_20251119 tools and the 20260801 toolsets, and it
// carries programmatic tool calling too (allowed_callers on a tool, caller
// on a tool_use). The betas these features were launched under
// (code-execution-2025-08-25, advanced-tool-use-2025-11-20,
// code-execution-web-tools-2026-02-09) are not among the SDK's constants.
// When the SDK is upgraded, this table is checked again against it.
var toolBetas = map[string]sdk.AnthropicBeta{
	"computer_20241022":    sdk.AnthropicBetaComputerUse2024_10_22,
	"bash_20241022":        sdk.AnthropicBetaComputerUse2024_10_22,
	"text_editor_20241022": sdk.AnthropicBetaComputerUse2024_10_22,
	"computer_20250124":    sdk.AnthropicBetaComputerUse2025_01_24,
	"computer_20251124":    sdk.AnthropicBetaComputerUse2025_11_24,
	"advisor_20260301":     sdk.AnthropicBetaAdvisorTool2026_03_01,
	// The MCP connector: an mcp_toolset and the request's mcp_servers
	// (2025-04-04 is deprecated; 2026-09-15 adds toolsets given inside
	// the conversation, which llm does not send).
	llm.ToolMCPToolset: sdk.AnthropicBetaMCPClient2025_11_20,
}

// RequiredBeta is the anthropic-beta value a tool of this type needs, or ""
// when it needs none (client tools and generally available server tools).
func RequiredBeta(toolType string) string { return string(toolBetas[toolType]) }

// Betas is the anthropic-beta header for a request with these tools: the
// configured values first, then each value a tool needs, every value once.
// Values may themselves be comma-separated lists. Nil means no header.
func Betas(configured []string, tools []llm.Tool) []string {
	var out []string
	add := func(list string) {
		for _, b := range strings.Split(list, ",") {
			if b = strings.TrimSpace(b); b != "" && !slices.Contains(out, b) {
				out = append(out, b)
			}
		}
	}
	for _, b := range configured {
		add(b)
	}
	for _, t := range tools {
		add(RequiredBeta(t.Type))
	}
	return out
}
