package server

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiter is a token bucket per key (an agent id, a remote address). Idle
// buckets are forgotten, so a flood of keys cannot grow it without bound.
type limiter struct {
	perMinute float64
	burst     int
	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
}

type bucket struct {
	lim  *rate.Limiter
	used time.Time
}

// newLimiter returns nil (no limit) when perMinute is 0.
func newLimiter(perMinute float64, burst int) *limiter {
	if perMinute <= 0 {
		return nil
	}
	if burst < 1 {
		burst = 1
	}
	return &limiter{perMinute: perMinute, burst: burst, buckets: map[string]*bucket{}}
}

// allow takes a token for key, or says how long until one is free.
func (l *limiter) allow(key string, now time.Time) (bool, time.Duration) {
	return l.allowN(key, now, 1)
}

// allowN takes n tokens for key at once, or says how long until they are
// free (forever, when n is over the burst).
func (l *limiter) allowN(key string, now time.Time, n int) (bool, time.Duration) {
	if l == nil || n <= 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) > time.Minute {
		// A bucket idle long enough to have refilled is the same as a new one.
		full := time.Duration(float64(l.burst) / l.perMinute * float64(time.Minute))
		for k, b := range l.buckets {
			if now.Sub(b.used) > full {
				delete(l.buckets, k)
			}
		}
		l.lastSweep = now
	}
	b := l.buckets[key]
	if b == nil {
		b = &bucket{lim: rate.NewLimiter(rate.Limit(l.perMinute/60), l.burst)}
		l.buckets[key] = b
	}
	b.used = now
	r := b.lim.ReserveN(now, n)
	if !r.OK() {
		return false, rate.InfDuration
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}
