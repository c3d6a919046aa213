package sandbox

import (
	"debug/elf"
	"os"
	"testing"
)

// interpreterOf is debug/elf's answer, to check the hand-read one.
func interpreterOf(t *testing.T, path string) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Skipf("%s: %v", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				t.Fatal(err)
			}
			return string(b[:len(b)-1])
		}
	}
	return ""
}

// TestELFInterpreter compares the hand-read interpreter with debug/elf's:
// on a dynamic system program, on this (static or not) test binary, on a
// file that is not ELF and on a missing one.
func TestELFInterpreter(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, path string }{
		{"a system program", "/bin/sh"},
		{"this binary", self},
		{"not ELF", "launch_linux.go"},
		{"missing", "/nonexistent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := ""
			if _, err := os.Stat(tt.path); err == nil && tt.name != "not ELF" {
				want = interpreterOf(t, tt.path)
			}
			if got := elfInterpreter(tt.path); got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
			t.Logf("%s: %q", tt.path, want)
		})
	}
}
