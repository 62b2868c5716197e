package kernel_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/hermitcrab/skills"
)

func installSkill(t *testing.T, dir, name, text string) {
	t.Helper()
	d := filepath.Join(dir, kernel.SkillsDir, name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, skills.SkillFile), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestEachSkillGrowsThePromptByAtMost40Tokens pins the measure the issue
// sets: the compiled prompt of every tier grows by at most 40 estimated
// tokens (160 bytes) a skill installed, long descriptions included, past
// the index's one header line.
func TestEachSkillGrowsThePromptByAtMost40Tokens(t *testing.T) {
	dir := t.TempDir()
	k := kerneltest.OpenIn(t, dir, kernel.Options{})
	ctx := context.Background()
	size := func(tier int) int {
		p, err := k.Conversation().Prompt(ctx, tier)
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Text)
	}
	for _, tier := range []int{prompt.Light, prompt.Present, prompt.Deep} {
		none := size(tier)
		installSkill(t, dir, "first", "---\nname: first\ndescription: Use first.\n---\nbody\n")
		one := size(tier)
		if one-none > len(skills.IndexHeader)+2+skills.MaxIndexLine {
			t.Errorf("tier %d: the first skill costs %d bytes", tier, one-none)
		}
		const n = 8
		for i := range n {
			name := string(rune('a'+i)) + "-skill"
			installSkill(t, dir, name, "---\nname: "+name+"\ndescription: "+strings.Repeat("Use this whenever a long description would tempt anyone. ", 20)+"\n---\nbody\n")
		}
		if per := (size(tier) - one) / n; per > 40*4 {
			t.Errorf("tier %d: %d bytes a skill, over 40 tokens", tier, per)
		}
		if err := os.RemoveAll(filepath.Join(dir, kernel.SkillsDir)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTheLLMLoadsASkillAndGainsNoTool pins skill_load in a call: offered
// while a skill exists, answering its instructions inert, and a skill
// naming tools (allowed-tools) grants none of them.
func TestTheLLMLoadsASkillAndGainsNoTool(t *testing.T) {
	dir := t.TempDir()
	installSkill(t, dir, "charts", "---\nname: charts\ndescription: Draw charts.\nallowed-tools: web_request, fs_write\n---\nUse recharts.\x1b[2J\n")
	js := kerneltest.Replies(
		kerneltest.ToolUse("t1", "skill_load", map[string]string{"name": "charts"}),
		kerneltest.TextBlock("loaded"),
		kerneltest.TextBlock("next"),
	)
	k, p := scriptedKernel(t, dir, js)
	for _, line := range []string{"chart it", "again"} {
		if _, err := k.Conversation().Say(context.Background(), "c", line, light); err != nil {
			t.Fatal(err)
		}
	}
	reqs := p.Requests()
	if !strings.Contains(reqs[0].System[0].Text, "- charts: Draw charts.") {
		t.Errorf("the prompt lacks the skill's line")
	}
	if names := strings.Join(toolNames(reqs[0]), " "); !strings.Contains(names, "skill_load") {
		t.Errorf("skill_load not offered: %s", names)
	}
	got := toolResults(reqs[1])["t1"].Content.String()
	if !strings.Contains(got, "Use recharts.") || strings.Contains(got, "\x1b") {
		t.Errorf("the skill's instructions: %q", got)
	}
	for _, r := range reqs[1:] {
		if names := strings.Join(toolNames(r), " "); strings.Contains(names, "web_request") || strings.Contains(names, "fs_write") {
			t.Errorf("loading a skill granted a tool: %s", names)
		}
	}
}
