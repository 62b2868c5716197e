package hermitcrab

import (
	"path/filepath"

	"github.com/llmkernels/kernels/hermitcrab/skills"
)

// Skill is one skill of the data directory as `hermitcrab skills list`
// shows it: what SKILL.md says, and the line every prompt carries for it.
type Skill struct {
	skills.Skill
	IndexLine  string `json:"index_line"`
	IndexBytes int    `json:"index_bytes"` // the line and its newline
}

// SkillList is the skills of a data directory and the folders left out,
// each with the reason.
type SkillList struct {
	Dir      string   `json:"dir"`
	Skills   []Skill  `json:"skills"`
	Problems []string `json:"problems"`
}

// ListSkills reads the skills of the data directory dataDir, without
// opening its store.
func ListSkills(dataDir string) (SkillList, error) {
	d := skills.Dir{Path: filepath.Join(dataDir, SkillsDir)}
	list, problems, err := d.List()
	if err != nil {
		return SkillList{}, err
	}
	out := SkillList{Dir: d.Path, Skills: []Skill{}, Problems: problems}
	if out.Problems == nil {
		out.Problems = []string{}
	}
	for _, s := range list {
		if s.Files == nil {
			s.Files = []string{}
		}
		line := skills.IndexLine(s)
		out.Skills = append(out.Skills, Skill{s, line, len(line) + 1})
	}
	return out, nil
}
