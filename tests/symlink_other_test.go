//go:build !windows

package tests

// linkUnseenReason: a symbolic link is seen as one here.
func linkUnseenReason() string { return "" }
