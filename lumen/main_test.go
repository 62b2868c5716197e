package lumen

import (
	"fmt"
	"os"
	"testing"
)

// Helper modes: the test binary runs again as a helper process when one
// of these is set (TestMain).
const (
	readOnlyHelperEnv = "LUMEN_TEST_READ_ONLY" // the instance root to read as another user
	killHelperEnv     = "LUMEN_TEST_KILL"      // the instance root to run until killed
)

func TestMain(m *testing.M) {
	if root := os.Getenv(readOnlyHelperEnv); root != "" {
		if err := readEverything(root); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if root := os.Getenv(killHelperEnv); root != "" {
		os.Exit(runUntilKilled(root))
	}
	code := m.Run()
	if chatFixture.root != "" {
		os.RemoveAll(chatFixture.root)
	}
	os.Exit(code)
}
