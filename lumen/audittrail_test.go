package lumen

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A step's record that cannot be written is an error, never a silent gap
// in the audit trail: the interruption, the failed step and the applied
// change each report it.
func TestAKernelMemoryThatCannotBeWrittenIsAnError(t *testing.T) {
	in, _ := newInstance(t, "", nil, nil)
	// The clock's day files live under data/memory/2026: a plain file
	// there makes every append fail, for root too.
	year := filepath.Join(in.memoryDir(), "2026")
	if err := os.RemoveAll(year); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(year, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stopped string
	if stop, err := in.interrupted(ctx, "think", &stopped); !stop || err == nil || stopped != "think" {
		t.Errorf("interrupted = %v, %v (stopped %q): want true and the write's error", stop, err, stopped)
	}

	cause := errors.New("the model timed out")
	err := in.stepFailed("decide", cause)
	if !errors.Is(err, cause) || !strings.Contains(err.Error(), "recording that decide failed") {
		t.Errorf("stepFailed = %v: want the cause and the recording failure", err)
	}

	applied, refused, err := in.applyLogged(context.Background(), LoopAction, "record",
		Change{Target: "goal", Op: "add", Name: "write tests"})
	if err == nil || refused != "" {
		t.Errorf("applyLogged = %+v, %q, %v: want the logging failure reported", applied, refused, err)
	}
}
