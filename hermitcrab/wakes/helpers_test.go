package wakes_test

import (
	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/wakes"
)

// Short names for what the tests use of the package under test and of
// kerneltest's clock; its other helpers are called by their own names.
type testClock = kerneltest.Clock

var (
	newClock      = kerneltest.NewClock
	post          = kerneltest.Post
	netInstanceAt = kerneltest.NetInstance
)

const (
	wakeBatch            = wakes.WakeBatch
	wakeConversationKeep = wakes.ConversationKeep
)
