package lumen

import (
	"github.com/llmkernels/kernels/lumen/memory"
	"github.com/llmkernels/kernels/lumen/skill"
)

// Memory is the instance's memory store, for tests that seed and read it.
func (in *Instance) Memory() *memory.Store { return in.mem }

// Skills is the instance's skill runner, for tests that check skills.
func (in *Instance) Skills() *skill.Runner { return in.skills }
