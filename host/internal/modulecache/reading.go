package modulecache

import (
	"fmt"
	"runtime/debug"
)

// ErrChanged is a mapped file that was truncated while it was read: its pages past the new end
// fault.
var ErrChanged = fmt.Errorf("the file changed while it was read: %w", ErrDamaged)

// Reading runs f, which reads mapped bytes (Map). A fault on them (the file truncated under the
// mapping) ends f with ErrChanged rather than crashing the process.
func Reading(f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			err = ErrChanged
		}
	}()
	return f()
}
