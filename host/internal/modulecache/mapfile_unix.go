//go:build unix

package modulecache

import (
	"os"
	"syscall"
)

// mapFile maps a cache file read-only: a shaped module is megabytes that a hook run reads once,
// to check and compile it, and the page cache holds it already. release unmaps it. Where the file
// cannot be mapped (an empty file, a file system without mmap) it is read instead.
func mapFile(path string) (b []byte, release func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if size := st.Size(); size > 0 && size == int64(int(size)) && st.Mode().IsRegular() {
		if b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_PRIVATE); err == nil {
			return b, func() { _ = syscall.Munmap(b) }, nil
		}
	}
	b, err = os.ReadFile(path)
	return b, func() {}, err
}
