package ipc

import "time"

// fillState is what the filler knows when it decides whether to start a
// standby: the pool, the slots, the calls, and the last start.
type fillState struct {
	pool, standby     int // standbys in the pool, and how many it should hold
	alive, maxWorkers int // processes holding a slot, and the slots
	calls             int // calls inside Run
	// rush: replacements are being started back to back (see below).
	rush bool
	// noneReady: no standby in the pool is ready.
	noneReady bool
	// lastStarting: the standby started last is not ready yet (nor has it
	// waited ReadyWait).
	lastStarting bool
	sinceIdle    time.Duration // since calls last fell to zero
	refillDelay  time.Duration // RefillDelay
	failures     int           // standbys that died unused since one last served
	sinceFailure time.Duration // since the last of them
}

// fillDecision is the filler's next step: start a standby now, or wait
// (at most wait; negative: until nudged).
type fillDecision struct {
	start bool
	wait  time.Duration
}

// decideFill is the filler's policy, a function of what it knows alone. It
// returns the decision and whether the rush goes on.
//
// The pool is refilled off the call path: a replacement starts only once
// no call has been running for refillDelay, one at a time (the next when
// the last one is ready), except when no standby is ready while calls run:
// the next call needs one more than the running ones need the CPU. A stream
// of calls is bound by process starts, so the pool is then refilled with
// starts back to back, which overlap, as many as the pool and
// --max-workers allow (the rush): measured on two cores, back-to-back
// calls took 8-12 ms each this way, 19 ms with one start at a time. A
// worker that keeps dying at start is restarted with a backoff.
func decideFill(st fillState) (d fillDecision, rush bool) {
	d.wait = -1
	rush = st.rush && st.pool < st.standby && st.calls > 0
	if st.pool < st.standby && st.alive < st.maxWorkers {
		switch {
		case st.calls > 0 && (rush || st.noneReady):
			rush, d.start = true, true
		case st.calls > 0:
			// Never compete with a running call; its end nudges.
		case st.lastStarting:
			// Wait for the last one to be ready.
		default:
			if d.wait = st.refillDelay - st.sinceIdle; d.wait <= 0 {
				d.start = true
			}
		}
	}
	if d.start && st.failures > 0 {
		backoff := min(10*time.Millisecond<<min(st.failures, 8), 2*time.Second)
		if left := backoff - st.sinceFailure; left > 0 {
			d.start, d.wait = false, left
		}
	}
	return d, rush
}
