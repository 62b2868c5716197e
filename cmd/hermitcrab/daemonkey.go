package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/provider"
	"github.com/llmkernels/kernels/hermitcrab"
)

// withDaemonKernel opens the kernel for wake --daemon. Without an API key
// it opens all the same and says so: a daemon waits for triggers, and
// needs a key only once one fires; watchKey then takes up a key given
// later ('hermitcrab key set', the web page).
func (f *flags) withDaemonKernel(cmd *cobra.Command, interval time.Duration, fn func(*hermitcrab.Kernel) error) (err error) {
	k, err := f.open(cmd, true)
	keyless := errors.As(err, new(*provider.KeyError))
	if keyless {
		k, err = f.open(cmd, false)
	}
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, k.Close()) }()
	if keyless {
		fmt.Fprintln(cmd.ErrOrStderr(), "no API key yet: the daemon runs and waits, but a wake needs one; set ANTHROPIC_API_KEY, store one with 'hermitcrab key set' (taken up while the daemon runs), or choose another provider with --provider")
		ctx, stop := context.WithCancel(cmd.Context())
		defer stop()
		go f.watchKey(ctx, cmd, k, interval)
	}
	return fn(k)
}

// watchKey gives k a client once a key is found, looking every interval.
func (f *flags) watchKey(ctx context.Context, cmd *cobra.Command, k *hermitcrab.Kernel, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := f.useClient(cmd, k)
		if err == nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "API key found: the triggers' wakes can run now")
			return
		}
		if !errors.As(err, new(*provider.KeyError)) {
			fmt.Fprintln(cmd.ErrOrStderr(), "error: taking up the API key:", err)
			return
		}
	}
}

// sayNoTriggers says so when the instance has written no triggers yet: the
// daemon then only waits (the instance writes them at wake 0.4 and 0.5).
func sayNoTriggers(ctx context.Context, w io.Writer, k *hermitcrab.Kernel) error {
	s, err := k.Wakes().Status(ctx)
	if err != nil {
		return err
	}
	if len(s.Triggers) == 0 {
		fmt.Fprintln(w, "no triggers at wake 0.4 or 0.5 yet: waiting for the instance to write some ('hermitcrab wake status' shows them)")
	}
	return nil
}
