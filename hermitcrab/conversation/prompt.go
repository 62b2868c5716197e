package conversation

import (
	"context"
	"strings"

	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/hermitcrab/trigger"
	"github.com/llmkernels/kernels/internal/plainjson"
)

// triggerNotice is what the prompt says about unreadable trigger lines.
func triggerNotice(problems []string) string {
	if len(problems) == 0 {
		return ""
	}
	return "[wake triggers] The kernel cannot read these lines of wake 0.4 and 0.5 and skips them until they are rewritten (forms: every 6h tier 1: …, daily 09:00 tier 2: …, stale BLOCK after 3d tier 1: …, inbox tier 1, webhook NAME tier 1: …, watch URL every 1h tier 1: …, cap 24 wakes a day, cap $0.50 a day):\n- " +
		strings.Join(problems, "\n- ")
}

// CompilePrompt compiles a tier's system prompt as a call sends it: the
// wake block's instructions (package prompt), then, on the deep tier (the
// boot's) when there are any, the trigger lines the kernel cannot read,
// and the index of skills. The trigger notice is said at boot rather than
// on every call: an instance migrated from G1 may carry thousands of
// characters of unreadable lines, which would otherwise be paid for on
// each call until rewritten.
func (c *Caller) CompilePrompt(ctx context.Context, tier int) (prompt.Compiled, error) {
	src := c.blocks.Source(ctx)
	comp, err := prompt.Compile(src, tier)
	if err != nil {
		return comp, err
	}
	if tier == prompt.Deep {
		set, err := trigger.Read(src)
		if err != nil {
			return comp, err
		}
		if n := triggerNotice(set.Problems); n != "" {
			comp.Text += "\n\n" + n
			comp.Sections = append(comp.Sections, prompt.Section{Instruction: "(wake triggers)", Text: n})
			comp.Problems = append(comp.Problems, set.Problems...)
		}
	}
	withSkillIndex(&comp, c.skillList())
	return comp, nil
}

// Prompt is a tier's system prompt as a call sends it, with its size: what
// `hermitcrab prompt --json` prints, every field always present.
type Prompt struct {
	Tier       int              `json:"tier"`
	Text       string           `json:"text"`
	Sections   []prompt.Section `json:"sections"`
	Aperture   bool             `json:"aperture"` // no instructions for the tier: the pscale-0 aperture was used
	Problems   []string         `json:"problems"`
	Characters int              `json:"characters"`
	Tokens     int              `json:"tokens"` // estimated: characters / 4
}

// Prompt compiles a tier's system prompt (CompilePrompt) and measures it.
func (c *Caller) Prompt(ctx context.Context, tier int) (*Prompt, error) {
	comp, err := c.CompilePrompt(ctx, tier)
	if err != nil {
		return nil, err
	}
	return &Prompt{Tier: comp.Tier, Text: comp.Text, Sections: plainjson.List(comp.Sections), Aperture: comp.Aperture,
		Problems: plainjson.List(comp.Problems), Characters: len([]rune(comp.Text)), Tokens: comp.Tokens()}, nil
}
