package conversation

import (
	"context"
	"strings"

	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/hermitcrab/trigger"
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
// wake block's instructions (package prompt), then, when there are any,
// the trigger lines the kernel cannot read.
func (c *Caller) CompilePrompt(ctx context.Context, tier int) (prompt.Compiled, error) {
	src := c.blocks.Source(ctx)
	comp, err := prompt.Compile(src, tier)
	if err != nil {
		return comp, err
	}
	set, err := trigger.Read(src)
	if err != nil {
		return comp, err
	}
	if n := triggerNotice(set.Problems); n != "" {
		comp.Text += "\n\n" + n
		comp.Sections = append(comp.Sections, prompt.Section{Instruction: "(wake triggers)", Text: n})
		comp.Problems = append(comp.Problems, set.Problems...)
	}
	return comp, nil
}
