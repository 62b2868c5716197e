package prompt

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/llmkernels/kernels/llm"
)

// Fallbacks of spec §6.3, used for whatever the wake block does not say
// (the fast one as the spec writes it: llm.DefaultFastModel's dated id).
const (
	FallbackModel     = llm.DefaultDeepModel
	FallbackFastModel = "claude-haiku-4-5-20251001"
	FallbackMaxTokens = 8192
	// DefaultMaxToolLoops is the original kernel's tool-loop limit (§15).
	DefaultMaxToolLoops = 10
	// DefaultMaxMessages is the conversation window (§8.5).
	DefaultMaxMessages = 20
)

// Params are a tier's invocation parameters.
type Params struct {
	Tier         int           `json:"tier"`
	Model        string        `json:"model"`
	MaxTokens    int           `json:"max_tokens"`
	Thinking     *llm.Thinking `json:"thinking,omitempty"`
	MaxToolLoops int           `json:"max_tool_loops"`
	MaxMessages  int           `json:"max_messages"`
	// Notes say which values fell back and which lines were not understood.
	Notes []string `json:"notes,omitempty"`
}

// TierParamsWith reads a tier's parameters from wake 0.9.(TIER+3), one
// "key value" string per digit: "model NAME", "max_tokens N", "thinking
// enabled N" or "thinking adaptive" (or "thinking off"), "max_tool_loops
// N", "max_messages N". Whatever is missing or malformed takes the §6.3
// fallback, and a note says so; it never fails a call, so an instance that
// broke its own wake block can still be reached to repair it. model is
// the model of a tier whose wake block names none, in place of §6.3's
// (the person's configured model for the tier); "" keeps §6.3's. The wake
// block's own choice is never replaced.
func TierParamsWith(src Source, tier int, model string) (Params, error) {
	if tier < Light || tier > Deep {
		return Params{}, fmt.Errorf("tier %d: choose 1 (light), 2 (present) or 3 (deep)", tier)
	}
	p := Params{Tier: tier}
	lines, err := wakeList(src, fmt.Sprintf("0.9.%d", tier+3))
	if err != nil {
		return p, err
	}
	for _, line := range lines {
		key, value, _ := strings.Cut(strings.TrimSpace(line), " ")
		value = strings.TrimSpace(value)
		switch key {
		case "model":
			p.Model = value
		case "max_tokens":
			p.MaxTokens = p.positive(line, value)
		case "max_tool_loops":
			p.MaxToolLoops = p.positive(line, value)
		case "max_messages":
			p.MaxMessages = p.positive(line, value)
		case "thinking":
			p.Thinking = p.thinking(line, value)
		default:
			p.Notes = append(p.Notes, fmt.Sprintf("wake 0.9.%d: %q not understood (keys: model, max_tokens, thinking, max_tool_loops, max_messages); ignored", tier+3, line))
		}
	}
	switch {
	case p.Model != "":
	case model != "":
		p.Model = model
		p.Notes = append(p.Notes, fmt.Sprintf("no model for tier %d in wake 0.9.%d; using %s, the model configured for the tier", tier, tier+3, p.Model))
	default:
		p.Model = FallbackModel
		if tier == Light {
			p.Model = FallbackFastModel
		}
		p.Notes = append(p.Notes, fmt.Sprintf("no model for tier %d in wake 0.9.%d; using %s", tier, tier+3, p.Model))
	}
	if p.MaxTokens == 0 {
		p.MaxTokens = FallbackMaxTokens
	}
	if p.MaxToolLoops == 0 {
		p.MaxToolLoops = DefaultMaxToolLoops
	}
	if p.MaxMessages == 0 {
		p.MaxMessages = DefaultMaxMessages
	}
	return p, nil
}

// positive reads a whole number > 0; models sometimes write "8,192" or
// "8192.0", which mean the same.
func (p *Params) positive(line, value string) int {
	clean := strings.ReplaceAll(value, ",", "")
	clean = strings.TrimSuffix(clean, ".0")
	n, err := strconv.Atoi(clean)
	if err != nil || n <= 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("wake %q: want a whole number above 0; using the default", line))
		return 0
	}
	return n
}

func (p *Params) thinking(line, value string) *llm.Thinking {
	mode, budget, _ := strings.Cut(value, " ")
	switch mode {
	case "adaptive":
		return &llm.Thinking{Type: "adaptive"}
	case "off", "disabled", "none":
		return nil
	case "enabled":
		if n := p.positive(line, strings.TrimSpace(budget)); n > 0 {
			return &llm.Thinking{Type: "enabled", BudgetTokens: n}
		}
		return nil
	}
	p.Notes = append(p.Notes, fmt.Sprintf("wake %q: want \"thinking enabled N\", \"thinking adaptive\" or \"thinking off\"; thinking stays off", line))
	return nil
}
