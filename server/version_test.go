package server

import (
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/version"
)

func TestVersion(t *testing.T) {
	if Version() == "" || Version() != version.Get().Version {
		t.Fatalf("Version() = %q, version.Get() = %+v", Version(), version.Get())
	}
}
