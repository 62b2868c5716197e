package lumen

import (
	"fmt"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/llm"
)

// Text renders what init made.
func (r *InitReport) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Initialized a lumen instance in %s\n", r.Root)
	for _, c := range r.Created {
		if strings.HasPrefix(c, "prompts/") {
			continue
		}
		fmt.Fprintf(&b, "  created %s\n", c)
	}
	fmt.Fprintf(&b, "  created prompts/<step>/{system,prompt}.md for %s\n", strings.Join(steps, ", "))
	fmt.Fprintf(&b, "  created prompts/json/, prompts/act/, prompts/parts/: the rest of the text the model reads (docs/lumen.md, Prompts)\n")
	fmt.Fprintf(&b, "git: %s\n", r.Git)
	return b.String()
}

// Reply is what the chosen skill showed the user (the chat skill's
// reply); "" when the loop showed nothing.
func (r *ActionReport) Reply() string {
	if r.Skill != nil && r.Skill.Display != "" {
		return r.Skill.Display
	}
	return ""
}

// Text renders an action loop in a few lines.
func (r *ActionReport) Text() string {
	var b strings.Builder
	b.WriteString(r.Trigger)
	if v := r.Verdict; v != nil {
		switch v.Outcome {
		case OutcomeAct:
			s := v.Scores[v.Chosen-1]
			fmt.Fprintf(&b, " · chose %s", s)
		case OutcomeSkip:
			fmt.Fprintf(&b, " · skipped: %s", v.Reason)
		case OutcomeGap:
			fmt.Fprintf(&b, " · %s; created goal %q", v.Reason, r.CreatedGoal)
		}
		if len(v.Scores) > 1 {
			var others []string
			for _, s := range v.Scores {
				if s.Candidate != v.Chosen {
					others = append(others, fmt.Sprintf("#%d B=%.3f", s.Candidate, s.B))
				}
			}
			fmt.Fprintf(&b, " (others: %s)", strings.Join(others, ", "))
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\n  note: %s", n)
	}
	if r.Skill != nil && !r.Skill.OK {
		fmt.Fprintf(&b, "\n  skill %s failed: %s", r.Skill.Skill, r.Skill.Error)
	}
	for _, s := range r.Created {
		fmt.Fprintf(&b, "\n  created skill %s (its --help was read)", s)
	}
	if r.Delta != nil {
		fmt.Fprintf(&b, "\n  outcome: %s (delta %.2f)", clip.Line(r.Outcome, 200), *r.Delta)
	}
	for _, a := range r.Applied {
		fmt.Fprintf(&b, "\n  %s (%s)", a.Change, a.File)
	}
	for _, s := range r.Refused {
		fmt.Fprintf(&b, "\n  %s", s)
	}
	if r.Stopped != "" {
		fmt.Fprintf(&b, "\n  stopped after %s (Ctrl-C)", strings.ToUpper(r.Stopped))
	}
	if r.Reflection != nil {
		b.WriteString("\n" + indent(r.Reflection.Text(), "  "))
	}
	return b.String()
}

// Text renders a reflection.
func (r *ReflectionReport) Text() string {
	var b strings.Builder
	var fired []string
	for _, f := range r.Fired {
		fired = append(fired, f.String())
	}
	fmt.Fprintf(&b, "reflection: %s", strings.Join(fired, "; "))
	if r.Summary != "" {
		fmt.Fprintf(&b, "\n  review: %s", clip.Line(r.Summary, 300))
	}
	fmt.Fprintf(&b, "\n  %d tensions, %d proposals, %d conflicts, %d changes applied", len(r.Tensions), len(r.Proposals), len(r.Conflicts), len(r.Applied))
	for _, c := range r.Conflicts {
		fmt.Fprintf(&b, "\n  conflict: %s", c.Rationale)
	}
	for _, a := range r.Applied {
		fmt.Fprintf(&b, "\n  changed: %s (%s)", a.Change, a.File)
	}
	for _, f := range r.Failed {
		fmt.Fprintf(&b, "\n  not applied: %s", f)
	}
	if r.Stopped != "" {
		fmt.Fprintf(&b, "\n  stopped after %s (Ctrl-C)", strings.ToUpper(r.Stopped))
	}
	return b.String()
}

// Text renders an explore loop.
func (r *ExploreReport) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "question: %s", r.Question)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\n  note: %s", n)
	}
	if r.Skill != nil {
		fmt.Fprintf(&b, "\n  investigated with skill %s", r.Skill.Skill)
	}
	if r.Found != "" {
		fmt.Fprintf(&b, "\n  found: %s", clip.Line(r.Found, 300))
	}
	for _, s := range r.Refused {
		fmt.Fprintf(&b, "\n  %s", s)
	}
	if r.Stopped != "" {
		fmt.Fprintf(&b, "\n  stopped after %s (Ctrl-C)", strings.ToUpper(r.Stopped))
	}
	return b.String()
}

// UsageText is "N calls, I→O tokens, cost $C, R% of input from cache".
func UsageText(u Usage) string {
	return fmt.Sprintf("%d calls, %s→%s tokens, %s", u.Calls, kilo(u.InputTokens), kilo(u.OutputTokens), llm.CostLine(u.CostUSD, callsUsage(u)))
}

// cacheShare is "R% of input from cache", worded as llm.CostLine words it.
func cacheShare(u Usage) string {
	_, share, _ := strings.Cut(llm.CostLine(0, callsUsage(u)), ", ")
	return orDash(share)
}

// callsUsage is u as the API's usage: input tokens apart from the cache's.
func callsUsage(u Usage) llm.Usage {
	return llm.Usage{InputTokens: u.InputTokens - u.CacheReadTokens - u.CacheWriteTokens, OutputTokens: u.OutputTokens,
		CacheReadInputTokens: u.CacheReadTokens, CacheCreationInputTokens: u.CacheWriteTokens}
}

func kilo(n int) string {
	if n < 1000 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%.1fk", float64(n)/1000)
}

// StepLine is one line for a memory a run wrote: time, author and step,
// the spend recorded on it, and what it says.
func StepLine(r Record) string {
	spend := ""
	if r.Usage != nil {
		spend = fmt.Sprintf("  %d call(s) %s→%s tok $%.4f", r.Usage.Calls, kilo(r.Usage.InputTokens), kilo(r.Usage.OutputTokens), r.Usage.CostUSD)
	}
	return fmt.Sprintf("%s  %-8s %-11s%s  %s", r.Timestamp.Local().Format("15:04:05"), r.Author, r.Step, spend, clip.Line(r.Description, 140))
}

// Text renders a cycle of lumen run: a header (when, how long, what it
// cost), what the loop did, and what skills displayed to the user as
// "lumen> …" lines.
func (r *CycleReport) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cycle %d · %s · %s · %s · %s · ", r.N, r.Started.Local().Format("15:04:05"), r.Duration.Round(time.Millisecond), UsageText(r.Usage), r.Loop)
	switch {
	case r.Idle != "":
		b.WriteString("idle: " + r.Idle)
	case r.Action != nil:
		b.WriteString(r.Action.Text())
		if reply := r.Action.Reply(); reply != "" {
			b.WriteString("\n" + indent(reply, "lumen> "))
		}
	case r.Explore != nil:
		b.WriteString(r.Explore.Text())
		if r.Explore.Skill != nil && r.Explore.Skill.Display != "" {
			b.WriteString("\n" + indent(r.Explore.Skill.Display, "lumen> "))
		}
	}
	if r.Failed != "" {
		fmt.Fprintf(&b, "\n  FAILED: %s; next cycle after %s", clip.Line(r.Failed, 300), r.Backoff)
	}
	if m := r.Maintenance; m != nil {
		var did []string
		if m.Decayed {
			did = append(did, "memory weights decayed")
		}
		for _, y := range m.Summarized {
			did = append(did, fmt.Sprintf("summary of %d updated", y))
		}
		fmt.Fprintf(&b, "\n  maintenance: %s", strings.Join(did, ", "))
	}
	return b.String()
}

func indent(text, prefix string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

// Text renders the totals of a run.
func (r *RunReport) Text() string {
	loops := []string{}
	for _, l := range []string{LoopAction, LoopExplore} {
		loops = append(loops, fmt.Sprintf("%d %s", r.ByLoop[l], l))
	}
	return fmt.Sprintf("run: %d cycles (%s; %d idle, %d failed) in %s; %s%s; $%.4f spent today (UTC, every process); stopped: %s%s",
		r.Cycles, strings.Join(loops, ", "), r.Idle, r.Failed, r.Elapsed.Round(time.Second), UsageText(r.Usage), detail(r.CostNote), r.SpentDay, r.Stopped, detail(r.Detail))
}

func detail(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}
