//go:build !testhold

package ipc

// holdForTest is the end-to-end tests' hold (testhold.go), left out of
// every build without -tags testhold: a shipped binary never blocks.
func holdForTest(int) {}
