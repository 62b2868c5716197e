package wakes_test

import (
	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/hermitcrab/wakes"
)

// The names the tests use, from where they live: the kernel whole, and
// what kerneltest shares with the other packages' tests.
type (
	Kernel      = kernel.Kernel
	Options     = kernel.Options
	CallOptions = conversation.CallOptions
	testClock   = kerneltest.Clock
)

var (
	openKernel     = kerneltest.Open
	openKernelIn   = kerneltest.OpenIn
	scripted       = kerneltest.Scripted
	text           = kerneltest.Text
	at             = kerneltest.At
	toolUse        = kerneltest.ToolUse
	replies        = kerneltest.Replies
	textBlock      = kerneltest.TextBlock
	fakeAnthropic  = kerneltest.FakeAnthropic
	startTestBeach = kerneltest.StartBeach
	newClock       = kerneltest.NewClock
	post           = kerneltest.Post
	netInstanceAt  = kerneltest.NetInstance
)

const (
	wakeBatch            = wakes.WakeBatch
	wakeConversationKeep = wakes.ConversationKeep
)

const raceEnabled = kerneltest.Race
