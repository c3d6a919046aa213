package rawsqlite

import (
	"encoding/binary"
	"sync"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// ptrSize is the width of a C pointer on this target.
const ptrSize = int(unsafe.Sizeof(uintptr(0)))

// cmem views n bytes of C memory at p as a Go slice, without copying. The
// conversion happens inside libc, which keeps this package free of
// uintptr-to-unsafe.Pointer casts (go vet's unsafeptr check).
func cmem(p uintptr, n int) []byte {
	if n == 0 {
		return nil
	}
	return libc.GoBytes(p, n)
}

// loadPtr reads a C pointer stored at p (an out-parameter).
func loadPtr(p uintptr) uintptr {
	if ptrSize == 8 {
		return uintptr(binary.NativeEndian.Uint64(cmem(p, 8)))
	}
	return uintptr(binary.NativeEndian.Uint32(cmem(p, 4)))
}

// storePtr writes a C pointer at p.
func storePtr(p, v uintptr) {
	if ptrSize == 8 {
		binary.NativeEndian.PutUint64(cmem(p, 8), uint64(v))
		return
	}
	binary.NativeEndian.PutUint32(cmem(p, 4), uint32(v))
}

// loadInt32 reads a C int stored at p.
func loadInt32(p uintptr) int32 {
	return int32(binary.NativeEndian.Uint32(cmem(p, 4)))
}

// cstring copies s into n+1 bytes of C memory at p, NUL terminated.
func cstring(p uintptr, s string) {
	b := cmem(p, len(s)+1)
	copy(b, s)
	b[len(s)] = 0
}

// funcAddr turns a top-level Go function into the C function pointer the
// transpiled code calls through. A Go func value is a pointer to a funcval
// whose first word is the code pointer, which is exactly how ccgo calls a
// C function pointer back (see https://golang.org/s/go11func). Closures
// must not be passed: their context would be lost.
func funcAddr[F any](fn F) uintptr {
	holder := struct{ fn F }{fn}
	return *(*uintptr)(unsafe.Pointer(&holder))
}

// withTLS runs f on a fresh, short-lived TLS, for calls that belong to no
// Conn or that run on a goroutine other than the Conn's owner.
func withTLS[T any](f func(*libc.TLS) T) T {
	tls := libc.NewTLS()
	defer tls.Close()
	return f(tls)
}

var initState struct {
	once     sync.Once
	memstats bool
	// watched: the allocator is wrapped for [AllocationFailed].
	watched bool
	rc      int32
}

// ensureInit turns on SQLite's memory statistics and initializes SQLite,
// once per process. Memory statistics are what make SQLite enforce the
// hard heap limit; they can only be turned on before initialization.
func ensureInit() int32 {
	initState.once.Do(func() {
		withTLS(func(tls *libc.TLS) struct{} {
			va := tls.Alloc(8)
			defer tls.Free(8)
			rc := sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_MEMSTATUS, libc.VaList(va, int32(1)))
			initState.memstats = rc == sqlite3.SQLITE_OK
			initState.watched = initState.memstats && wrapAllocator(tls)
			initState.rc = sqlite3.Xsqlite3_initialize(tls)
			return struct{}{}
		})
	})
	return initState.rc
}

// MemStatsEnabled reports whether SQLite keeps memory statistics in this
// process, which [SetHardHeapLimit] and [MemoryUsed] depend on. It is false
// only when other code initialized SQLite before this package could.
func MemStatsEnabled() bool {
	ensureInit()
	return initState.memstats
}

// SetHardHeapLimit sets SQLite's process-wide hard heap limit
// (sqlite3_hard_heap_limit64) to n bytes and returns the previous limit.
// n == 0 removes the limit; n < 0 only queries it. Allocations that would
// exceed it fail, and the statement that asked reports [ResultNoMem]. It is
// process wide: every connection in the process shares it.
func SetHardHeapLimit(n int64) int64 {
	ensureInit()
	return withTLS(func(tls *libc.TLS) int64 {
		return sqlite3.Xsqlite3_hard_heap_limit64(tls, n)
	})
}

// MemoryUsed returns the bytes SQLite has allocated and not freed, process
// wide (sqlite3_memory_used).
func MemoryUsed() int64 {
	ensureInit()
	return withTLS(func(tls *libc.TLS) int64 {
		return sqlite3.Xsqlite3_memory_used(tls)
	})
}

// MemoryHighwater returns the highest value of [MemoryUsed] since the last
// reset, and resets it when reset is true (sqlite3_memory_highwater).
func MemoryHighwater(reset bool) int64 {
	ensureInit()
	return withTLS(func(tls *libc.TLS) int64 {
		return sqlite3.Xsqlite3_memory_highwater(tls, libc.Bool32(reset))
	})
}
