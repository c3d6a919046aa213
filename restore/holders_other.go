//go:build !unix

package restore

// otherHolders finds nothing on Windows: SQLite's locks there belong to a
// handle (LockFileEx), so they can only be tested by taking them. A
// reader in a transaction keeps its snapshot of the old state (WAL), and
// a writer makes restore's own transaction wait and then refuse (busy).
func otherHolders(string) ([]holder, error) { return nil, nil }

func programName(int) string { return "" }
