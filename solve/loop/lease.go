package loop

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/llmkernels/kernels/solve/store"
)

// leaseTTL is how long a run's lease lasts without renewal; the running
// process renews it every leaseTTL/3. A process on the same host that is
// gone (kill -9) loses it at once; on another host, when it expires.
const leaseTTL = 30 * time.Second

// acquire takes the run's lease (a second process on the same root is
// refused with a *store.LeaseHeldError) and renews it in the background
// until release. A renewal that finds the lease taken stops the run:
// e.stop is called with store.ErrLeaseLost.
func (e *engine) acquire(ctx context.Context) error {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	if err := e.st.AcquireLease(ctx, e.root, e.owner, host, os.Getpid(), leaseTTL, processAlive); err != nil {
		return err
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(leaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				// A failed renewal for any other reason (a busy database)
				// is tried again at the next tick.
				if err := e.st.RenewLease(context.Background(), e.root, e.owner, leaseTTL); errors.Is(err, store.ErrLeaseLost) && e.stop != nil {
					e.stop(err)
					return
				}
			}
		}
	}()
	e.lease = func() {
		close(stop)
		<-done
		// A lease left behind is taken over by the next process (this
		// one is gone), so a failed release costs nothing.
		_ = e.st.ReleaseLease(context.Background(), e.root, e.owner)
	}
	return nil
}

// release gives the run's lease up.
func (e *engine) release() {
	if e.lease != nil {
		e.lease()
		e.lease = nil
	}
}
