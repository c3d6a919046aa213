package tokens

import (
	"fmt"
	"os"
)

// openNoFollow opens path for reading unless it is a symbolic link or
// another reparse point (a junction): Lstat looks at the name itself,
// and the file opened must be the one Lstat saw, so that a link put in
// its place between the two is refused too.
func openNoFollow(path string) (*os.File, error) {
	lfi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if lfi.Mode()&os.ModeSymlink != 0 || lfi.Mode()&os.ModeIrregular != 0 {
		return nil, symlinkError(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !os.SameFile(lfi, fi) {
		f.Close()
		return nil, fmt.Errorf("%s changed while it was opened; try again", path)
	}
	return f, nil
}
