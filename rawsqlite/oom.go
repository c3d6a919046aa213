package rawsqlite

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// A statement whose allocation fails does not always stop. An accumulator
// (group_concat, string_agg, json_group_array, json_group_object) records
// the failure, frees what it held and ignores every later row: the
// statement reads all of its input before it reports "out of memory", and
// over an endless recursive CTE it never does. SQLite keeps no count of
// failed allocations, but it records the largest size ever requested
// (SQLITE_STATUS_MALLOC_SIZE) before it checks the heap limit, and every
// allocation that succeeds reaches the allocator, which this package wraps
// to record the largest one it served. A request larger than every one
// served since the watch began is one that failed.

// stopped: the progress handler stopped a statement since the watch began.
var stopped atomic.Bool

// served is the largest size (rounded up, as the allocator sees it) the
// allocator has returned memory for since [ResetAllocationWatch].
var served atomic.Int64

// The allocator SQLite had before this package wrapped it.
var origMalloc, origRealloc uintptr

const (
	offMemMalloc  = unsafe.Offsetof((*sqlite3.Tsqlite3_mem_methods)(nil).FxMalloc)
	offMemRealloc = unsafe.Offsetof((*sqlite3.Tsqlite3_mem_methods)(nil).FxRealloc)
	memMethodsLen = int(unsafe.Sizeof(sqlite3.Tsqlite3_mem_methods{}))
)

// wrapAllocator puts watchMalloc and watchRealloc in front of SQLite's
// allocator. It must run before sqlite3_initialize; false when SQLite
// refused (it was initialized already).
func wrapAllocator(tls *libc.TLS) bool {
	m := tls.Alloc(memMethodsLen)
	defer tls.Free(memMethodsLen)
	va := tls.Alloc(8)
	defer tls.Free(8)
	if sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_GETMALLOC, libc.VaList(va, m)) != sqlite3.SQLITE_OK {
		return false
	}
	origMalloc, origRealloc = loadPtr(m+offMemMalloc), loadPtr(m+offMemRealloc)
	if origMalloc == 0 || origRealloc == 0 {
		return false
	}
	storePtr(m+offMemMalloc, funcAddr(watchMalloc))
	storePtr(m+offMemRealloc, funcAddr(watchRealloc))
	return sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_MALLOC, libc.VaList(va, m)) == sqlite3.SQLITE_OK
}

func watchMalloc(tls *libc.TLS, n int32) uintptr {
	p := (*(*func(*libc.TLS, int32) uintptr)(unsafe.Pointer(&struct{ uintptr }{origMalloc})))(tls, n)
	if p != 0 {
		noteServed(n)
	}
	return p
}

func watchRealloc(tls *libc.TLS, old uintptr, n int32) uintptr {
	p := (*(*func(*libc.TLS, uintptr, int32) uintptr)(unsafe.Pointer(&struct{ uintptr }{origRealloc})))(tls, old, n)
	if p != 0 {
		noteServed(n)
	}
	return p
}

func noteServed(n int32) {
	for {
		cur := served.Load()
		if int64(n) <= cur || served.CompareAndSwap(cur, int64(n)) {
			return
		}
	}
}

// ResetAllocationWatch starts the watch [AllocationFailed] reports on:
// SQLite's record of the largest request and the allocator's of the
// largest it served both start again from now.
func ResetAllocationWatch() {
	if ensureInit(); !initState.watched {
		return
	}
	withTLS(func(tls *libc.TLS) struct{} {
		p := tls.Alloc(16)
		defer tls.Free(16)
		sqlite3.Xsqlite3_status64(tls, sqlite3.SQLITE_STATUS_MALLOC_SIZE, p, p+8, 1)
		return struct{}{}
	})
	served.Store(0)
	stopped.Store(false)
	markFired.Store(false)
}

// AllocationFailed reports whether SQLite asked for memory the allocator
// never served since [ResetAllocationWatch]: an allocation failed, almost
// always at the hard heap limit. A failure smaller than an allocation
// served earlier in the watch goes unseen (the statement then stops only
// when it ends, as without the watch). False when the allocator could not
// be wrapped (see [MemStatsEnabled]).
func AllocationFailed() bool {
	if ensureInit(); !initState.watched {
		return false
	}
	return withTLS(allocationFailed)
}

func allocationFailed(tls *libc.TLS) bool {
	p := tls.Alloc(16)
	defer tls.Free(16)
	sqlite3.Xsqlite3_status64(tls, sqlite3.SQLITE_STATUS_MALLOC_SIZE, p, p+8, 0)
	largest := int64(binary.NativeEndian.Uint64(cmem(p+8, 8)))
	return largest > served.Load()
}

// StopOnAllocationFailure makes the statements on c stop within every n
// virtual-machine instructions once [AllocationFailed] holds, through
// SQLite's progress handler (which this replaces): Step then fails with
// [ErrStoppedAtHeapLimit] ([ResultNoMem]) instead of reading the rest of its input. n <= 0 removes
// the handler. It does nothing when the allocator is not watched.
func (c *Conn) StopOnAllocationFailure(n int) error {
	if !c.usable() {
		return errClosed
	}
	ensureInit()
	if n <= 0 || !initState.watched {
		sqlite3.Xsqlite3_progress_handler(c.tls, c.db, 0, 0, 0)
		c.oomStop = false
		return nil
	}
	sqlite3.Xsqlite3_progress_handler(c.tls, c.db, int32(clampInt32(n)), funcAddr(stopIfAllocationFailed), 0)
	c.oomStop = true
	return nil
}

// stopIfAllocationFailed is the progress handler: nonzero stops the
// statement (SQLITE_INTERRUPT), which Step reports as out of memory.
func stopIfAllocationFailed(tls *libc.TLS, _ uintptr) int32 {
	if allocationFailed(tls) {
		stopped.Store(true)
		checkHighMark(tls, true)
		return 1
	}
	checkHighMark(tls, false)
	return 0
}

// The high mark lets a worker say that its memory is running out while it
// still can: a process that dies of it outside SQLite (the Go runtime's
// allocation refused under the OS limit) says nothing a front should have
// to parse.
type highMark struct {
	bytes  int64
	onHigh func(used int64)
}

var (
	mark      atomic.Pointer[highMark]
	markFired atomic.Bool
)

// SetMemoryHighMark makes the allocation watch call onHigh, once until the
// next [ResetAllocationWatch] or SetMemoryHighMark, with SQLite's memory
// in use ([MemoryUsed]) when that reaches bytes at one of its checks
// ([Conn.StopOnAllocationFailure]), or as soon as a statement meets the
// heap limit there: the watch stops it, or Step reports [ResultNoMem].
// The mark is process wide, as the heap limit is. onHigh runs inside Step,
// on its goroutine, and must not use the connection. bytes <= 0 or a nil
// onHigh removes the mark.
func SetMemoryHighMark(bytes int64, onHigh func(used int64)) {
	if bytes <= 0 || onHigh == nil {
		mark.Store(nil)
	} else {
		mark.Store(&highMark{bytes, onHigh})
	}
	markFired.Store(false)
}

// checkHighMark calls the mark's onHigh once SQLite's memory in use
// reaches it, or at once when atLimit. Once it has fired, or without a
// mark, it costs two atomic loads.
func checkHighMark(tls *libc.TLS, atLimit bool) {
	m := mark.Load()
	if m == nil || markFired.Load() {
		return
	}
	used := sqlite3.Xsqlite3_memory_used(tls)
	if (atLimit || used >= m.bytes) && markFired.CompareAndSwap(false, true) {
		m.onHigh(used)
	}
}

// ErrStoppedAtHeapLimit is Step's error for a statement that
// [Conn.StopOnAllocationFailure] stopped, rather than one that reported
// its own failure or was interrupted.
var ErrStoppedAtHeapLimit = &Error{Code: ResultNoMem, Msg: "out of memory: an allocation failed at the heap limit and the statement was stopped there"}
