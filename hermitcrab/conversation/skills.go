package conversation

import (
	"context"
	"encoding/json"

	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/hermitcrab/skills"
	"github.com/llmkernels/kernels/hermitcrab/tool"
	"github.com/llmkernels/kernels/llm"
)

// Skills (package skills): their index joins every prompt, skill_load
// joins the tools of every call while there is a skill, and skill_write is
// one set_tools away. A skill is text: loading one changes no tool.

// skillList is the instance's skills; problems with a skill's files go to
// the log.
func (c *Caller) skillList() []skills.Skill {
	if c.opts.Skills == nil {
		return nil
	}
	list, problems, err := c.opts.Skills.List()
	if err != nil {
		c.log.Warn("the skills are not offered", "err", err)
	}
	for _, p := range problems {
		c.log.Warn("a skill is left out: " + p)
	}
	return list
}

// withSkillIndex adds the index of skills to a compiled prompt.
func withSkillIndex(comp *prompt.Compiled, list []skills.Skill) {
	if idx := skills.Index(list); idx != "" {
		comp.Text += "\n\n" + idx
		comp.Sections = append(comp.Sections, prompt.Section{Instruction: "(skills)", Text: idx})
	}
}

// skillTools are skill_load and skill_write, nil without a skills
// directory.
func (c *Caller) skillTools() []llm.ToolHandler {
	if c.opts.Skills == nil {
		return nil
	}
	dir := c.opts.Skills
	load := tool.Inert(func(_ context.Context, in json.RawMessage) (llm.ToolOutput, error) {
		var args struct {
			Name string `json:"name"`
			File string `json:"file"`
		}
		if err := tool.Decode(in, &args); err != nil {
			return llm.ToolOutput{}, err
		}
		text, err := dir.Load(args.Name, args.File)
		if err != nil {
			return llm.ToolOutput{}, err
		}
		return llm.TextOutput(text), nil
	})
	write := tool.Func(func(_ context.Context, args struct {
		Name         string `json:"name"`
		Description  string `json:"description"`
		Instructions string `json:"instructions"`
	}) (any, error) {
		if err := dir.Write(args.Name, args.Description, args.Instructions); err != nil {
			return nil, err
		}
		return map[string]string{"saved": args.Name}, nil
	})
	return []llm.ToolHandler{
		{Tool: llm.Tool{Name: "skill_load", Description: "A skill's instructions (the prompt's [skills] list), or with file one of its resources.",
			InputSchema: tool.Schema(`"name":{"type":"string"},"file":{"type":"string"}`, "name")}, Run: load},
		{Tool: llm.Tool{Name: "skill_write", Description: "Save a skill of your own: its name (a-z, 0-9, -), when to use it, and its instructions.",
			InputSchema: tool.Schema(`"name":{"type":"string"},"description":{"type":"string"},"instructions":{"type":"string"}`, "name", "description", "instructions")}, Run: write},
	}
}
