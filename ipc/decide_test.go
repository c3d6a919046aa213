package ipc

import (
	"testing"
	"time"
)

func TestDecideFill(t *testing.T) {
	const ms = time.Millisecond
	// base: a pool of 2 missing one standby, slots free, no call running,
	// idle long enough, nothing starting, no failures.
	base := fillState{pool: 1, standby: 2, alive: 1, maxWorkers: 4, sinceIdle: time.Second, refillDelay: 5 * ms}
	tests := []struct {
		name     string
		change   func(*fillState)
		want     fillDecision
		wantRush bool
	}{
		{"idle past the refill delay: start", func(*fillState) {}, fillDecision{start: true, wait: 5*ms - time.Second}, false},
		{"idle for less than the delay: wait the rest", func(s *fillState) { s.sinceIdle = 2 * ms }, fillDecision{wait: 3 * ms}, false},
		{"pool full: wait for a nudge", func(s *fillState) { s.pool = 2 }, fillDecision{wait: -1}, false},
		{"no free slot: wait for a nudge", func(s *fillState) { s.alive = 4 }, fillDecision{wait: -1}, false},
		{"the last start is not ready: wait for it", func(s *fillState) { s.lastStarting = true }, fillDecision{wait: -1}, false},
		{"a call runs and a standby is ready: never compete", func(s *fillState) { s.calls = 1 }, fillDecision{wait: -1}, false},
		{"a call runs and none is ready: rush", func(s *fillState) { s.calls = 1; s.noneReady = true }, fillDecision{start: true, wait: -1}, true},
		{"the rush goes on while calls run", func(s *fillState) { s.calls = 2; s.rush = true; s.lastStarting = true }, fillDecision{start: true, wait: -1}, true},
		{"the rush ends when the pool is full", func(s *fillState) { s.calls = 2; s.rush = true; s.pool = 2 }, fillDecision{wait: -1}, false},
		{"the rush ends when no call runs", func(s *fillState) { s.rush = true; s.lastStarting = true }, fillDecision{wait: -1}, false},
		{"a rush without a free slot keeps waiting", func(s *fillState) { s.calls = 1; s.noneReady = true; s.alive = 4 }, fillDecision{wait: -1}, false},
		{"failures back off", func(s *fillState) { s.failures = 1; s.sinceFailure = 5 * ms }, fillDecision{wait: 15 * ms}, false},
		{"failures back off a rush too", func(s *fillState) { s.calls = 1; s.noneReady = true; s.failures = 3; s.sinceFailure = 30 * ms }, fillDecision{wait: 50 * ms}, true},
		{"the backoff is over", func(s *fillState) { s.failures = 2; s.sinceFailure = 50 * ms }, fillDecision{start: true, wait: 5*ms - time.Second}, false},
		{"the backoff stops growing at 2 s", func(s *fillState) { s.failures = 30 }, fillDecision{wait: 2 * time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := base
			tt.change(&st)
			got, rush := decideFill(st)
			if got != tt.want || rush != tt.wantRush {
				t.Fatalf("decideFill(%+v) = %+v, rush %v; want %+v, rush %v", st, got, rush, tt.want, tt.wantRush)
			}
		})
	}
}
