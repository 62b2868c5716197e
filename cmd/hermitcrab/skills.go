package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/hermitcrab"
	"github.com/llmkernels/kernels/internal/termtext"
)

func (f *flags) skillsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "skills", Short: "List, add or remove the instance's skills: instructions the LLM loads when it needs them",
		Long: `A skill is a folder in the data directory's skills directory holding a SKILL.md: a front
matter with its description (when to use it), then its instructions, and any resources
beside it. Every prompt lists each skill in one line of at most 160 bytes (40 tokens); the
LLM loads the instructions with skill_load when a task calls for them, and saves skills of
its own with skill_write. A skill grants no tool. Install one with 'skills add FOLDER'.
See docs/hermitcrab.md, "MCP servers and skills".`}
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
				printSkill(w, e)
			}
			for _, p := range out.Problems {
				fmt.Fprintln(w, "left out:", termtext.Line(p))
			}
			return nil
		},
	}
	asJSON = cli.JSONFlag(list)
	cmd.AddCommand(list, f.skillsAddCommand(), f.skillsRemoveCommand())
	return cmd
}

// printSkill prints a skill's line in the prompt and its size.
func printSkill(w io.Writer, s hermitcrab.Skill) {
	fmt.Fprintf(w, "%s (%d bytes in every prompt)\n", s.IndexLine, s.IndexBytes)
}

// skillUsage makes what the person must fix a usage error (exit 2), with
// the flag or command that does the rest.
func skillUsage(err error) error {
	e, ok := errors.AsType[*hermitcrab.SkillError](err)
	switch {
	case !ok:
		return err
	case e.Taken != "":
		err = fmt.Errorf("%s: --replace replaces it, 'hermitcrab skills remove %s' removes it", e.Reason, e.Taken)
	case e.FolderName:
		err = fmt.Errorf("%s (--name gives the skill another name than its folder's)", e.Reason)
	}
	return cli.Exit(cli.ExitUsage, err)
}

func (f *flags) skillsAddCommand() *cobra.Command {
	var name string
	var replace bool
	cmd := &cobra.Command{
		Use: "add FOLDER", Short: "Install the skill in FOLDER (which holds its SKILL.md)", Args: cobra.ExactArgs(1),
		Long: fmt.Sprintf(`Install the skill in FOLDER: the folder holding its SKILL.md and any resources is copied
into the skills directory as a skill named as the folder (or --name), checked as 'skills
list' checks a skill, and only then put in place, so no prompt ever sees it half copied.
It prints the line every prompt then carries for it; a running 'hermitcrab serve' offers it
from its next call.

Refused, with the reason and exit 2, with nothing installed: a folder whose SKILL.md 'skills
list' would leave out, a name that is not lowercase letters, digits and -, a skill of that
name already installed (unless --replace), a symbolic link that leads out of FOLDER or to a
folder (a link to a file inside FOLDER is copied as that file), a special file (a device, a
pipe, a socket), more than %d files and folders or more than %d MiB in all.`, hermitcrab.MaxSkillEntries, hermitcrab.MaxSkillBytes>>20),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := f.dataDir()
			if err != nil {
				return err
			}
			s, err := hermitcrab.AddSkill(dir, args[0], name, replace)
			if err != nil {
				return skillUsage(err)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "added skill %s; every prompt carries:\n", s.Name)
			printSkill(w, s)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "install the skill under this name instead of its folder's")
	cmd.Flags().BoolVar(&replace, "replace", false, "replace an installed skill of the same name")
	return cmd
}

func (f *flags) skillsRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use: "remove NAME", Short: "Uninstall a skill: its folder is deleted, and no prompt names it", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := f.dataDir()
			if err != nil {
				return err
			}
			if err := hermitcrab.RemoveSkill(dir, args[0]); err != nil {
				return skillUsage(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed skill %s\n", args[0])
			return nil
		},
	}
}
