package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/hermitcrab"
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
			out, err := hermitcrab.ListSkills(dir)
			if err != nil {
				return err
			}
			if *asJSON {
				return cli.PrintJSON(cmd.OutOrStdout(), out)
			}
			w := cmd.OutOrStdout()
			if len(out.Skills) == 0 {
				fmt.Fprintf(w, "no skills in %s\n", termtext.Line(out.Dir))
			}
			for _, e := range out.Skills {
				fmt.Fprintf(w, "%s (%d bytes in every prompt)\n", e.IndexLine, e.IndexBytes)
			}
			for _, p := range out.Problems {
				fmt.Fprintln(w, "left out:", termtext.Line(p))
			}
			return nil
		},
	}
	asJSON = cli.JSONFlag(list)
	cmd.AddCommand(list)
	return cmd
}
