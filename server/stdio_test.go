package server

import (
	"strings"
	"testing"
)

func TestPartialName(t *testing.T) {
	a, b := partialName("memory"), partialName("memory")
	if a == b || !strings.HasPrefix(a, "memory.") || !strings.HasSuffix(a, ".partial") {
		t.Fatalf("names %q %q", a, b)
	}
}
