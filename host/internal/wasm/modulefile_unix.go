//go:build unix

package wasm

import (
	"os"
	"syscall"
)

// mapModule maps the module file read-only. A hook run reads the 4 MB module once, to hash and
// shape it, and never needs it again: a copy on the heap cost every run ~1,100 page faults and
// the garbage a collection had to return, while the file's pages are in the page cache already
// and map in a few faults. release unmaps it. Where the file cannot be mapped (an empty file, a
// file system without mmap) it is read instead.
func mapModule(path string) (b []byte, release func(), err error) {
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
