package wasm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/tetratelabs/wazero/api"
)

// The data the host lifted out of a module (liftable) is written into each instance's memory by
// applyData, after wazero instantiated the module and before the guest's _initialize. It comes
// from the heap on the load that shaped the module, and from its own cache file, beside the
// shaped module, on every later one: read through a small buffer straight into the guest's
// memory, so the process never holds a second copy of it.

// dataPath is the cache file of the module's lifted data: its body, then a CRC-32C trailer.
func dataPath(cacheDir, digest string) string { return shapedFile(cacheDir, digest, ".data") }

// errDataDamaged is a data file whose bytes are not the ones written.
var errDataDamaged = errors.New("the data of the module is damaged")

// liftedData is where an instance's lifted data comes from: bytes, or the data file of the
// module digest in the cache directory dir. The zero value is a module that keeps its data section.
type liftedData struct {
	bytes       []byte
	dir, digest string
}

func (d liftedData) none() bool { return d.bytes == nil && d.dir == "" }

func (d liftedData) path() string { return dataPath(d.dir, d.digest) }

// apply writes the data into mem.
func (d liftedData) apply(mem api.Memory) error {
	switch {
	case d.bytes != nil:
		return applyData(mem, bufio.NewReader(bytes.NewReader(d.bytes)))
	case d.dir != "":
		return readDataFile(d.path(), func(r *bufio.Reader) error { return applyData(mem, r) })
	}
	return nil
}

// readDataFile runs read over the body of the data file at path and fails with errDataDamaged
// when the body read is not the body written (its CRC-32C), or when read left part of it.
func readDataFile(path string, read func(*bufio.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if info.Size() < 4 {
		return errDataDamaged
	}
	crc := crc32.New(castagnoli)
	body := io.TeeReader(io.LimitReader(f, info.Size()-4), crc)
	r := bufio.NewReaderSize(body, 64<<10)
	if err := read(r); err != nil {
		return err
	}
	if n, _ := io.Copy(io.Discard, r); n != 0 {
		return errDataDamaged
	}
	var trailer [4]byte
	if _, err := io.ReadFull(f, trailer[:]); err != nil || binary.LittleEndian.Uint32(trailer[:]) != crc.Sum32() {
		return errDataDamaged
	}
	return nil
}

// checkDataFile reports whether the data file at path is intact, and how long its body is,
// reading it through a small buffer: its pages are never mapped into the process.
func checkDataFile(path string) (size int64, err error) {
	err = readDataFile(path, func(r *bufio.Reader) error {
		size, err = io.Copy(io.Discard, r)
		return err
	})
	return size, err
}

// applyData writes a data section body as appendBody writes it (active segments on memory 0 at
// i32.const offsets) into mem. shapeModule checked every segment against the memory's minimum;
// a segment that does not fit still fails here, naming it, rather than writing past the memory.
func applyData(mem api.Memory, r *bufio.Reader) error {
	if mem == nil {
		return errors.New("the module has data for a memory it does not have")
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return errDataDamaged
	}
	for i := range n {
		var head [2]byte
		if _, err := io.ReadFull(r, head[:]); err != nil || head != [2]byte{0, 0x41} {
			return errDataDamaged
		}
		offset, err := readSleb32(r)
		if err != nil || offset < 0 {
			return errDataDamaged
		}
		if end, err := r.ReadByte(); err != nil || end != 0x0b {
			return errDataDamaged
		}
		size, err := binary.ReadUvarint(r)
		if err != nil || size > 1<<32 {
			return errDataDamaged
		}
		view, ok := mem.Read(uint32(offset), uint32(size))
		if !ok {
			return fmt.Errorf("data segment %d (%d bytes at %d) does not fit the memory of %d bytes", i, size, offset, mem.Size())
		}
		if _, err := io.ReadFull(r, view); err != nil {
			return errDataDamaged
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
				return 0, errDataDamaged
			}
			return int32(v), nil
		}
	}
	return 0, errDataDamaged
}
