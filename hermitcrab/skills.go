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

// SkillError is the error of AddSkill or RemoveSkill for what the person
// must fix (a folder that is not a skill, a name taken or unknown): its
// Reason says why (skills.InvalidError).
type SkillError = skills.InvalidError

// MaxSkillBytes and MaxSkillEntries bound the folder AddSkill copies: its
// files' total size, and its files and folders.
const (
	MaxSkillBytes   = skills.MaxInstallBytes
	MaxSkillEntries = skills.MaxInstallEntries
)

// AddSkill installs the skill in the folder src into the data directory
// dataDir as the skill name ("": the folder's name), replacing one of that
// name only with replace (skills.Dir.Add), and returns it as ListSkills
// shows it.
func AddSkill(dataDir, src, name string, replace bool) (Skill, error) {
	s, err := skills.Dir{Path: filepath.Join(dataDir, SkillsDir)}.Add(src, name, replace)
	if err != nil {
		return Skill{}, err
	}
	return listed(s), nil
}

// RemoveSkill uninstalls the skill name of the data directory dataDir.
func RemoveSkill(dataDir, name string) error {
	return skills.Dir{Path: filepath.Join(dataDir, SkillsDir)}.Remove(name)
}

// listed is s as ListSkills shows it.
func listed(s skills.Skill) Skill {
	if s.Files == nil {
		s.Files = []string{}
	}
	line := skills.IndexLine(s)
	return Skill{s, line, len(line) + 1}
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
		out.Skills = append(out.Skills, listed(s))
	}
	return out, nil
}
