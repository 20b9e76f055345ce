package modulecache

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The data file (kind Data) holds the data the host lifted out of a module when it shaped it
// (host/internal/wasm/admission): its body is a WebAssembly data section body of active segments
// on memory 0 at i32.const offsets. Each instance's memory gets it written after wazero
// instantiated the module and before the guest's _initialize: from the heap on the load that
// shaped the module, and from this file on every later one, read through a small buffer straight
// into the guest's memory, so the process never holds a second copy of it.

// pageSize is a WebAssembly page.
const pageSize = 1 << 16

// Memory is the guest memory lifted data is written into (wazero's api.Memory is one).
type Memory interface {
	// Read is a view of byteCount bytes at offset, false when they are outside the memory.
	Read(offset, byteCount uint32) ([]byte, bool)
	Size() uint32
}

// Lifted is where an instance's lifted data comes from: bytes on the heap, or the data file of a
// module in a cache directory. The zero value is a module that keeps its data section.
type Lifted struct {
	bytes  []byte
	dir    Dir
	digest Digest
}

// HeapData is lifted data held in memory (b nil: none).
func HeapData(b []byte) Lifted { return Lifted{bytes: b} }

// Lifted is the lifted data in the data file of module.
func (d Dir) Lifted(module Digest) Lifted { return Lifted{dir: d, digest: module} }

// None reports whether there is no lifted data.
func (d Lifted) None() bool { return d.bytes == nil && d.dir == "" }

// Path is the data file's path, "" for data on the heap.
func (d Lifted) Path() string {
	if d.dir == "" {
		return ""
	}
	return d.dir.Path(Data, d.digest.String())
}

// Forget removes the data file and the shaped module beside it (ForgetShaped), so that the next
// load shapes the module again.
func (d Lifted) Forget() {
	if d.dir != "" {
		d.dir.ForgetShaped(d.digest)
	}
}

// Apply writes the data into mem. A file that fails the cache's check, or whose body is not a
// data section the shaping writes, is ErrDamaged; mem may then hold part of it.
func (d Lifted) Apply(mem Memory) error {
	switch {
	case d.bytes != nil:
		return applyData(mem, bufio.NewReader(bytes.NewReader(d.bytes)))
	case d.dir != "":
		return d.dir.Stream(Data, d.digest.String(), d.digest, func(r *bufio.Reader, size int64) error {
			if size == 0 {
				return nil // a module whose data stayed in it (WriteShaped's empty body), as Check reads it
			}
			return applyData(mem, r)
		})
	}
	return nil
}

// Check reads the data file through a small buffer before any instance starts and reports whether
// it is intact and every segment fits a memory of minPages pages, as the shaping left it: a file
// that passes the cache's check but would fail every instance's start (garbage written with a
// valid checksum, a segment outside the memory) is found here, while the load can still shape the
// module again.
func (d Lifted) Check(minPages uint32) error {
	if d.dir == "" {
		return nil
	}
	return d.dir.Stream(Data, d.digest.String(), d.digest, func(r *bufio.Reader, size int64) error {
		if size == 0 {
			return nil
		}
		return walkData(r, func(i, offset, n uint64) error {
			if offset+n > uint64(minPages)*pageSize {
				return fmt.Errorf("data segment %d (%d bytes at %d) does not fit the memory's minimum of %d pages: %w",
					i, n, offset, minPages, ErrDamaged)
			}
			if _, err := r.Discard(int(n)); err != nil {
				return ErrDamaged // the body ends inside the segment
			}
			return nil
		})
	})
}

// applyData writes a data section body into mem. The shaping checked every segment against the
// memory's minimum; a segment that does not fit still fails here, naming it, rather than writing
// past the memory.
func applyData(mem Memory, r *bufio.Reader) error {
	if mem == nil {
		return errors.New("the module has data for a memory it does not have")
	}
	return walkData(r, func(i, offset, size uint64) error {
		view, ok := mem.Read(uint32(offset), uint32(size))
		if !ok || offset+size > uint64(mem.Size()) {
			return fmt.Errorf("data segment %d (%d bytes at %d) does not fit the memory of %d bytes", i, size, offset, mem.Size())
		}
		if _, err := io.ReadFull(r, view); err != nil {
			return ErrDamaged
		}
		return nil
	})
}

// walkData reads a data section body and calls segment with each segment's place and size,
// before its bytes, which segment must consume.
func walkData(r *bufio.Reader, segment func(i, offset, size uint64) error) error {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return ErrDamaged
	}
	for i := range n {
		var head [2]byte
		if _, err := io.ReadFull(r, head[:]); err != nil || head != [2]byte{0, 0x41} {
			return ErrDamaged
		}
		offset, err := readSleb32(r)
		if err != nil || offset < 0 {
			return ErrDamaged
		}
		if end, err := r.ReadByte(); err != nil || end != 0x0b {
			return ErrDamaged
		}
		size, err := binary.ReadUvarint(r)
		if err != nil || size > 1<<32 {
			return ErrDamaged
		}
		if err := segment(i, uint64(offset), size); err != nil {
			return err
		}
	}
	return nil
}

// readSleb32 reads a signed LEB128 of at most 32 bits.
func readSleb32(r io.ByteReader) (int32, error) {
	var v int64
	for shift := 0; shift < 35; shift += 7 {
		b, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		v |= int64(b&0x7f) << shift
		if b&0x80 == 0 {
			if b&0x40 != 0 { // sign-extend
				v |= -1 << (shift + 7)
			}
			if v < -1<<31 || v > 1<<31-1 {
				return 0, ErrDamaged
			}
			return int32(v), nil
		}
	}
	return 0, ErrDamaged
}
