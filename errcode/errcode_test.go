package errcode

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"
)

// foreign is another package's error that carries a code without a
// message (as ipc.RunError does).
type foreign struct{ code Code }

func (f foreign) Error() string        { return "foreign failure" }
func (f foreign) ErrorCode() Code      { return f.code }
func (f foreign) Is(target error) bool { return f.code.Is(target) }

func TestIsComparesCodes(t *testing.T) {
	timeout := New(Timeout, "query stopped after 3s")
	wrapped := fmt.Errorf("run: %w", timeout)
	killed := foreign{Timeout}
	tests := []struct {
		name   string
		err    error
		target error
		want   bool
	}{
		{"its code", timeout, Timeout, true},
		{"another code", timeout, SQL, false},
		{"an error with its code", timeout, New(Timeout, "other text"), true},
		{"an error with another code", timeout, New(SQL, "query stopped after 3s"), false},
		{"wrapped, its code", wrapped, Timeout, true},
		{"wrapped, another code", wrapped, ResourceLimit, false},
		{"an uncoded error", io.EOF, WorkerFailed, false},
		{"a nil target error", timeout, (*Error)(nil), false},
		{"a foreign error, its code", killed, Timeout, true},
		{"a foreign error, another code", killed, Cancelled, false},
		{"a foreign error, an Error with its code", killed, New(Timeout, "text"), true},
		{"wrapped foreign error", fmt.Errorf("run: %w", killed), Timeout, true},
		{"an Error, a foreign target with its code", timeout, killed, true},
		{"a code, an Error with it", Timeout, New(Timeout, "text"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errors.Is(tt.err, tt.target); got != tt.want {
				t.Fatalf("errors.Is(%v, %v) = %v, want %v", tt.err, tt.target, got, tt.want)
			}
		})
	}
}

func TestOfAndText(t *testing.T) {
	tests := []struct {
		err  error
		code Code
		text string
	}{
		{New(Declined, "the user declined; nothing was run"), Declined, "DECLINED: the user declined; nothing was run"},
		{fmt.Errorf("wrapped: %w", New(Protected, "memory_events is read-only")), Protected, "wrapped: PROTECTED_TABLE: memory_events is read-only"},
		{io.EOF, WorkerFailed, "EOF"},
		{fmt.Errorf("run: %w", foreign{ResourceLimit}), ResourceLimit, "run: foreign failure"},
	}
	for _, tt := range tests {
		t.Run(string(tt.code), func(t *testing.T) {
			if got := Of(tt.err); got != tt.code {
				t.Errorf("Of = %s, want %s", got, tt.code)
			}
			if got := tt.err.Error(); got != tt.text {
				t.Errorf("text %q, want %q", got, tt.text)
			}
		})
	}
}

func TestTimeoutTexts(t *testing.T) {
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{"interrupted", QueryTimeout(3*time.Second, "interrupted"), "TIMEOUT: query stopped after 3s (interrupted); narrow the query, add a LIMIT, or raise --query-timeout"},
		{"killed", QueryTimeout(300*time.Millisecond, "worker killed"), "TIMEOUT: query stopped after 300ms (worker killed); narrow the query, add a LIMIT, or raise --query-timeout"},
		{"snapshot stopped", SnapshotTimeout(1500*time.Millisecond, false), "TIMEOUT: the snapshot was not complete after 1.5s; nothing was changed and no partial snapshot is kept. Raise --snapshot-timeout"},
		{"snapshot killed", SnapshotTimeout(60*time.Second, true), "TIMEOUT: the snapshot was not complete after 60s (worker killed); nothing was changed and no partial snapshot is kept. Raise --snapshot-timeout, or free disk bandwidth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
