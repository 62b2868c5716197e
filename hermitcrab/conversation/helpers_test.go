package conversation_test

import (
	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/fetch"
	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
)

// Short names for what the tests use of the package under test and its
// neighbours; kerneltest's helpers are called by their own names.
type WebPolicy = fetch.Policy

var (
	everyRequestAcceptedAndEchoed = kerneltest.EveryRequestAcceptedAndEchoed
	Trim                          = conversation.Trim
	Describe                      = conversation.Describe
	ErrNoShell                    = conversation.ErrNoShell
	continuable                   = conversation.Continuable
	serverTools                   = conversation.ServerTools
	Open                          = kernel.Open
	readOnlyTools                 = conversation.ReadOnlyTools
	BootTools                     = conversation.BootTools()
)

const LevelError = conversation.LevelError
