package ipc

import (
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
)

// blockStrings reads an environment block back into its entries.
func blockStrings(p *uint16) []string {
	var out []string
	for {
		s := windows.UTF16PtrToString(p)
		if s == "" {
			return out
		}
		out = append(out, s)
		p = (*uint16)(unsafe.Add(unsafe.Pointer(p), (len(windows.StringToUTF16(s)))*2))
	}
}

func TestEnvBlock(t *testing.T) {
	root := os.Getenv("SYSTEMROOT")
	tests := []struct {
		name string
		env  []string
		want []string
	}{
		{"empty gets SYSTEMROOT", []string{}, []string{"SYSTEMROOT=" + root}},
		{"last value wins, without case", []string{"Path=a", "A=1", "PATH=b"}, []string{"PATH=b", "A=1", "SYSTEMROOT=" + root}},
		{"SYSTEMROOT kept as given", []string{"SystemRoot=X:\\win"}, []string{"SystemRoot=X:\\win"}},
		{"drive directories keep their leading =", []string{"=C:=C:\\x", "=D:=D:\\y", "SYSTEMROOT=r"}, []string{"=C:=C:\\x", "=D:=D:\\y", "SYSTEMROOT=r"}},
		{"non-ASCII", []string{"NAME=häagen ✓", "SYSTEMROOT=r"}, []string{"NAME=häagen ✓", "SYSTEMROOT=r"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Without a SYSTEMROOT of its own, the server has none to add.
			want := slices.DeleteFunc(slices.Clone(tt.want), func(s string) bool { return s == "SYSTEMROOT=" })
			p, err := envBlock(tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if got := blockStrings(p); !slices.Equal(got, want) {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
	if _, err := envBlock([]string{"A=x\x00y"}); err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Fatalf("a NUL in a value: %v", err)
	}
}
