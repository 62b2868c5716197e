package conversation_test

import (
	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/fetch"
	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
)

// The names the tests use, from where they live: the kernel whole, and
// what kerneltest shares with the other packages' tests.
type (
	Kernel      = kernel.Kernel
	Options     = kernel.Options
	CallOptions = conversation.CallOptions
	WebPolicy   = fetch.Policy
)

var (
	newKernel                     = kerneltest.New
	openKernel                    = kerneltest.Open
	openKernelIn                  = kerneltest.OpenIn
	scripted                      = kerneltest.Scripted
	text                          = kerneltest.Text
	at                            = kerneltest.At
	toolUse                       = kerneltest.ToolUse
	replies                       = kerneltest.Replies
	textBlock                     = kerneltest.TextBlock
	fakeAnthropic                 = kerneltest.FakeAnthropic
	everyRequestAcceptedAndEchoed = kerneltest.EveryRequestAcceptedAndEchoed
	startTestBeach                = kerneltest.StartBeach
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

const raceEnabled = kerneltest.Race
