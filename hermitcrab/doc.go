// Package hermitcrab is the Hermitcrab kernel: an LLM instance kept in
// pscale blocks, woken by a boot call that ends when it builds its own
// React interface, and talked to through callLLM. The contract is the
// hermitcrab-g1-architecture spec; docs/hermitcrab.md says what the kernel
// does for a person, docs/hermitcrab-network.md the beach and the wake
// triggers, and docs/design/hermitcrab.md how it is put together.
//
// This package is the kernel's public face. Open opens an instance's data
// directory (DataDir by default) and returns a Kernel, whose concerns do
// the work, each in its own package:
//
//	k, err := hermitcrab.Open(dir, hermitcrab.Options{Client: client})
//	k.Blocks().ReadNode(ctx, "purpose", addr)   // blocks: read, write, BSP, import
//	k.Conversation().Say(ctx, "terminal", "hello", hermitcrab.CallOptions{})
//	k.Wakes().RunTriggers(ctx)                  // the wake triggers
//	k.Network().SendMessage(ctx, out)           // the beach
//
// Serve runs the web shell over an instance, ServeEndpoints its webhooks
// and MCP endpoint alone, and ServeBeach a beach. Options and results are
// plain structs; an option the kernel cannot take is an OptionError that
// names the option, never a flag.
package hermitcrab
