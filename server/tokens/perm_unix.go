//go:build !windows

package tokens

import (
	"fmt"
	"os"
)

const chmodUnsupported = false

// modeProblem refuses group or other permission bits: the file lets
// anyone who can read it see which agents exist, and anyone who can write
// it add one.
func modeProblem(path string, mode os.FileMode) error {
	if mode.Perm()&0o077 != 0 {
		return fmt.Errorf("%s is readable or writable by others (mode %04o); make it private: chmod 600 %s", path, mode.Perm(), path)
	}
	return nil
}

// PlatformNote is empty where the file's mode is checked.
const PlatformNote = ""
