//go:build linux && (amd64 || arm64) && !seccomplog

package sandbox

// missAction answers a system call the table does not list: EPERM.
const missAction = retEPERM
