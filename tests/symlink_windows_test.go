package tests

// linkUnseenReason says why a symbolic link the test made cannot be seen
// as one by the server, or "": Wine makes a Unix symbolic link and
// presents it to Windows programs as the file it points to, so no
// Windows call can tell (native Windows makes a reparse point, which
// Lstat sees; server/tokens/TestSymlinkRefused runs there).
func linkUnseenReason() string {
	if underWine() {
		return "Wine presents a symbolic link as the file it points to, so no Windows call can see it (native Windows sees a reparse point: server/tokens/TestSymlinkRefused)"
	}
	return ""
}
