// Package lumen is the Lumen kernel (specs/lumen-consciousness-architecture.md):
// a persistent agent kept in a directory, with its soul (data/soul.md),
// values (data/values.json), goals (data/goals/[year].json), memory
// (data/memory/, package memory) and skills (skills/*/main.py, package
// skill).
//
// Open an instance with Open; its methods do what the lumen commands do:
// Chat, Run, Explore, Reflect, Maintain, Status, Memories, Audit. Init
// scaffolds a new one. Options and results are plain structs whose JSON
// tags are the commands' --json shapes; a bad option is an *OptionError
// naming the field.
//
// The kernel runs the loops and enforces the spec's write-permission
// table; the model gives judgment through one structured-output call per
// step, each prompt a template the instance holds under prompts/.
//
// The guide for users is docs/lumen.md; the choices the kernel makes where
// the spec is silent, and why, are in docs/design/lumen.md.
package lumen
