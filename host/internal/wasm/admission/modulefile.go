package admission

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
)

// The module file is read in one of two ways, and in both the bytes the pin was checked against
// are the bytes compiled. A hook run that finds the module's shaped bytes in the cache
// (modulecache, tied to the module's digest) needs only the digest: HashModule reads the file
// through a small buffer and never holds it. A load that shapes the module reads it once into
// the process's own memory (ReadModule) and hashes that copy, so a file changed between the pin
// check and the shaping is refused rather than compiled: a mapping of the file (MAP_PRIVATE) would
// see such a change.

// HashModule is the module's sha256 and size, read through a small buffer: --config and a hook
// run from the cache need only the digest, and holding the 4 MB module would cost them a garbage
// collection (the heap's first goal is 4 MiB) with its threads. A file larger than the host loads
// is refused before it is read.
func HashModule(path string) (modulecache.Digest, int64, error) {
	var d modulecache.Digest
	f, err := os.Open(path)
	if err != nil {
		return d, 0, &LoadError{Path: path, Reason: "cannot read the module", Err: err}
	}
	defer f.Close()
	if err := checkModuleSize(path, f); err != nil {
		return d, 0, err
	}
	h := sha256.New()
	n, err := io.CopyBuffer(h, io.LimitReader(f, MaxModuleBytes+1), make([]byte, 64<<10))
	if err != nil {
		return d, 0, &LoadError{Path: path, Reason: "cannot read the module", Err: err}
	}
	if n > MaxModuleBytes {
		return d, 0, tooLarge(path, n)
	}
	h.Sum(d[:0])
	return d, n, nil
}

// ReadModule reads the module whose digest HashModule returned into memory of its own and
// checks the copy is still that module.
func ReadModule(path string, digest modulecache.Digest) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &LoadError{Path: path, Reason: "cannot read the module", Err: err}
	}
	defer f.Close()
	if err := checkModuleSize(path, f); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if st, err := f.Stat(); err == nil {
		buf.Grow(int(st.Size()) + 1)
	}
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxModuleBytes+1)); err != nil {
		return nil, &LoadError{Path: path, Reason: "cannot read the module", Err: err}
	}
	b := buf.Bytes()
	if sha256.Sum256(b) != digest {
		return nil, &LoadError{Path: path, Reason: "the module file changed while it was loaded; load it again once it is written"}
	}
	return b, nil
}

// checkModuleSize refuses a file larger than the host loads before any of it is read.
func checkModuleSize(path string, f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return &LoadError{Path: path, Reason: "cannot read the module", Err: err}
	}
	if st.Size() > MaxModuleBytes {
		return tooLarge(path, st.Size())
	}
	return nil
}

func tooLarge(path string, size int64) error {
	return &LoadError{Path: path, Reason: fmt.Sprintf("is %d bytes; the host loads modules of at most %d bytes (%d MiB)",
		size, MaxModuleBytes, MaxModuleBytes>>20)}
}
