package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/hermitcrab"
	"github.com/llmkernels/kernels/hermitcrab/skills"
	"github.com/llmkernels/kernels/internal/termtext"
)

func (f *flags) skillsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "skills", Short: "List the instance's skills: instructions the LLM loads when it needs them",
		Long: `A skill is a folder in the data directory's skills directory holding a SKILL.md: a front
matter with its description (when to use it), then its instructions, and any resources
beside it. Every prompt lists each skill in one line of at most 160 bytes (40 tokens); the
LLM loads the instructions with skill_load when a task calls for them, and saves skills of
its own with skill_write. A skill grants no tool. Install one by copying its folder into
the skills directory. See docs/hermitcrab.md, "MCP servers and skills".`}
	var asJSON *bool
	list := &cobra.Command{
		Use: "list", Short: "List the skills, each with the line the prompt gives it", Args: cobra.NoArgs,
		Long: `List the skills: name, the line each prompt carries for it and its size, and the
folders left out with the reason. With --json: {"dir", "skills": [{"name", "description",
"files", "index_line", "index_bytes"}], "problems"}.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := f.dataDir()
			if err != nil {
				return err
			}
			d := skills.Dir{Path: filepath.Join(dir, hermitcrab.SkillsDir)}
			list, problems, err := d.List()
			if err != nil {
				return err
			}
			type entry struct {
				skills.Skill
				IndexLine  string `json:"index_line"`
				IndexBytes int    `json:"index_bytes"`
			}
			out := struct {
				Dir      string   `json:"dir"`
				Skills   []entry  `json:"skills"`
				Problems []string `json:"problems"`
			}{Dir: d.Path, Skills: []entry{}, Problems: problems}
			if out.Problems == nil {
				out.Problems = []string{}
			}
			for _, s := range list {
				if s.Files == nil {
					s.Files = []string{}
				}
				line := skills.IndexLine(s)
				out.Skills = append(out.Skills, entry{s, line, len(line) + 1})
			}
			if *asJSON {
				return cli.PrintJSON(cmd.OutOrStdout(), out)
			}
			w := cmd.OutOrStdout()
			if len(list) == 0 {
				fmt.Fprintf(w, "no skills in %s\n", termtext.Line(d.Path))
			}
			for _, e := range out.Skills {
				fmt.Fprintf(w, "%s (%d bytes in every prompt)\n", e.IndexLine, e.IndexBytes)
			}
			for _, p := range problems {
				fmt.Fprintln(w, "left out:", termtext.Line(p))
			}
			return nil
		},
	}
	asJSON = cli.JSONFlag(list)
	cmd.AddCommand(list)
	return cmd
}
