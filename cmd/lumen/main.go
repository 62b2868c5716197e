// Command lumen runs the Lumen kernel: a persistent agent kept in a
// directory (docs/lumen.md).
package main

import "github.com/llmkernels/kernels/internal/cli"

func main() {
	cli.New("lumen", "A persistent agent kept in a directory: soul, values, goals, memory, skills",
		`Lumen keeps an agent in a directory: soul, values, goals, memory and skills.
It chats, runs its own action, explore and reflection loops, and audits every step
in memory.

Not built yet in this version: the kernel and its commands (init, chat, run,
reflect, status, memory, values, goals, skills). What works now is the shared LLM
runtime: use 'lumen ping' to check your provider set-up.`).Run()
}
