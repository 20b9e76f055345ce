// Package modulecache owns every file the host keeps about a plugin module between hook runs,
// beside wazero's compiled code in the compilation cache directory, and each one's format: the
// module's metadata record (record.go), its shaped bytes and lifted data (shaped.go, data.go),
// the convergence memo (its body is package memo's), the run replay's record (replay.go) and the
// overrun marker (overrun.go)
// (docs/operating.md, "What persists between runs").
//
// Every file has one container and one integrity scheme: a header naming the file's kind, the
// kind's version and the sha256 of the module the file was made from (the module the operator
// pins), the body, and a CRC-32C over header and body. A file is trusted only after all of that
// was checked against the module being loaded: a file of another module (copied under this
// module's name, or left by an older version), of another kind or version, or damaged, is an
// error (ErrForeign, ErrDamaged) that the caller answers by ignoring the file and making it again,
// never by using it. A body that passes that check is still checked for what it must be before
// anything acts on it (a data file's segments inside the memory, Lifted.Check); what only the
// runtime can tell (a shaped module that does not compile, a record that is not the module's own
// answer) the loader refuses and makes again. Files are written whole under a temporary name and
// renamed, so a concurrent reader (another hook run on the node) sees the old file or the new
// one, never half of either.
//
// Trust: the scheme catches damage, mix-ups and stale files, not a forger. The directory is the
// hook's own (in the chart, an emptyDir of the pod that only the hook container writes); anyone
// who can write it can also write wazero's compiled machine code beside these files, which the
// host runs natively, so a keyed checksum here would protect nothing. The host adds one fence
// that does not rest on the directory: the metadata record, which carries the plugin's grants,
// is compared with the module's own answer before the plugin's first OpenStack request
// (host/internal/wasm). The package trusts nothing it reads and links no wasm runtime, OpenStack
// SDK or Kubernetes client (host/internal/layering).
package modulecache

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// Digest is a module's sha256.
type Digest [sha256.Size]byte

// ParseDigest reads a digest in hex.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(d) {
		return d, fmt.Errorf("%q is not a sha256 digest in hex", s)
	}
	copy(d[:], b)
	return d, nil
}

func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// Kind is one kind of file: where it lives, what it is called and which version of its body it
// holds. Bump a kind's Version with any change to what its body means: files of another version
// are foreign.
type Kind struct {
	// ID is written into the header; Dir and Ext name the file.
	ID      byte
	Dir     string
	Ext     string
	Version uint32
	// Max is the largest body Read accepts (0: any); a larger file is damaged.
	Max int64
}

// Errors a caller answers by making the file again.
var (
	// ErrDamaged is a file whose bytes are not the ones written (checksum, length, structure).
	ErrDamaged = errors.New("the cache file is damaged")
	// ErrForeign is an intact file that is not this module's, or not of this kind or version.
	ErrForeign = errors.New("the cache file belongs to another module, kind or version")
)

// magic starts every file; format versions the header itself.
const (
	magic  = "OSMC"
	format = 1
)

// headerSize is magic, format, kind, two reserved bytes, the kind's version, the module digest and
// the body's length.
const headerSize = 4 + 1 + 1 + 2 + 4 + sha256.Size + 8

const trailerSize = 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Dir is a cache directory.
type Dir string

// Path is the file of kind k for key (a module digest in hex, or another name the kind is kept
// under, such as a plugin's env prefix).
func (d Dir) Path(k Kind, key string) string {
	return filepath.Join(string(d), k.Dir, "v"+strconv.FormatUint(uint64(k.Version), 10)+"-"+key+k.Ext)
}

func header(k Kind, module Digest, size int) []byte {
	h := make([]byte, 0, headerSize)
	h = append(h, magic...)
	h = append(h, format, k.ID, 0, 0)
	h = binary.LittleEndian.AppendUint32(h, k.Version)
	h = append(h, module[:]...)
	return binary.LittleEndian.AppendUint64(h, uint64(size))
}

// checkHeader reads a header: the body's length, and ErrForeign when the file is not this kind's,
// of this version, made from module; ErrDamaged when it is no header at all.
func checkHeader(h []byte, k Kind, module Digest) (int64, error) {
	if len(h) < headerSize || string(h[:4]) != magic || h[4] != format {
		return 0, ErrDamaged
	}
	n := binary.LittleEndian.Uint64(h[12+sha256.Size:])
	if n > 1<<40 {
		return 0, ErrDamaged
	}
	if h[5] != k.ID || binary.LittleEndian.Uint32(h[8:]) != k.Version || !bytes.Equal(h[12:12+sha256.Size], module[:]) {
		return int64(n), ErrForeign
	}
	return int64(n), nil
}

// Write writes parts as the body of the file of kind k for key, made from module.
func (d Dir) Write(k Kind, key string, module Digest, parts ...[]byte) error {
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	h := header(k, module, size)
	crc := crc32.Update(0, castagnoli, h)
	for _, p := range parts {
		crc = crc32.Update(crc, castagnoli, p)
	}
	all := append([][]byte{h}, parts...)
	return writeWhole(d.Path(k, key), append(all, binary.LittleEndian.AppendUint32(nil, crc))...)
}

// WriteFunc writes the body write produces, exactly size bytes, as the file of kind k for key, made
// from module, without holding it in memory.
func (d Dir) WriteFunc(k Kind, key string, module Digest, size int, write func(w io.Writer) error) error {
	path := d.Path(k, key)
	f, err := create(path)
	if err != nil {
		return err
	}
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(f, crc), 64<<10)
	counted := &countingWriter{w: bw}
	_, err = bw.Write(header(k, module, size))
	if err == nil {
		err = write(counted)
	}
	if err == nil && counted.n != int64(size) {
		err = fmt.Errorf("wrote %d bytes of a %d-byte body", counted.n, size)
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		_, err = f.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	}
	return finish(f, path, err)
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Read returns the body of the file of kind k for key, made from module, once checked: the whole
// file is read into memory (use it for small files; k.Max bounds it).
func (d Dir) Read(k Kind, key string, module Digest) ([]byte, error) {
	f, err := os.Open(d.Path(k, key))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < headerSize+trailerSize || (k.Max > 0 && st.Size() > k.Max+headerSize+trailerSize) {
		return nil, ErrDamaged
	}
	b := make([]byte, st.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, err
	}
	return check(b, k, module)
}

// check verifies a whole file in b and returns its body.
func check(b []byte, k Kind, module Digest) ([]byte, error) {
	if len(b) < headerSize+trailerSize {
		return nil, ErrDamaged
	}
	n, err := checkHeader(b, k, module)
	if err == ErrDamaged {
		return nil, err
	}
	end := len(b) - trailerSize
	if int64(end-headerSize) != n || crc32.Checksum(b[:end], castagnoli) != binary.LittleEndian.Uint32(b[end:]) {
		return nil, ErrDamaged
	}
	if err != nil {
		return nil, err
	}
	return b[headerSize:end], nil
}

// Stream runs read over the body of the file of kind k for key, made from module, and fails
// with ErrDamaged when the body read is not the body written (its checksum, checked once read
// has consumed it) or read left part of it. The body never sits whole in memory; read may have
// acted on bytes that later prove damaged, and must be undone by the caller on ErrDamaged.
func (d Dir) Stream(k Kind, key string, module Digest, read func(r *bufio.Reader, size int64) error) error {
	f, err := os.Open(d.Path(k, key))
	if err != nil {
		return err
	}
	defer f.Close()
	h := make([]byte, headerSize)
	if _, err := io.ReadFull(f, h); err != nil {
		return ErrDamaged
	}
	n, foreign := checkHeader(h, k, module)
	if foreign == ErrDamaged {
		return foreign
	}
	crc := crc32.New(castagnoli)
	crc.Write(h)
	r := bufio.NewReaderSize(io.TeeReader(io.LimitReader(f, n), crc), 64<<10)
	if foreign == nil {
		if err := read(r, n); err != nil {
			return err
		}
	}
	// A foreign file is read through too: damaged (an edited header) is the better answer.
	if left, _ := io.Copy(io.Discard, r); left != 0 && foreign == nil {
		return ErrDamaged
	}
	var trailer [trailerSize]byte
	if _, err := io.ReadFull(f, trailer[:]); err != nil || binary.LittleEndian.Uint32(trailer[:]) != crc.Sum32() {
		return ErrDamaged
	}
	if extra, _ := f.Read(trailer[:1]); extra != 0 {
		return ErrDamaged
	}
	return foreign
}

// Check reads the whole file of kind k for key through a small buffer and reports the body's
// length when it is intact and module's.
func (d Dir) Check(k Kind, key string, module Digest) (int64, error) {
	var size int64
	err := d.Stream(k, key, module, func(r *bufio.Reader, n int64) error {
		size = n
		_, err := io.Copy(io.Discard, r)
		return err
	})
	return size, err
}

// Map maps the file of kind k for key and returns its body once checked. release unmaps it; the
// body must not be used after, and only inside Reading (a file truncated under the mapping faults).
func (d Dir) Map(k Kind, key string, module Digest) (body []byte, release func(), err error) {
	path := d.Path(k, key)
	b, unmap, err := mapFile(path)
	if err != nil {
		return nil, nil, err
	}
	err = Reading(func() error {
		body, err = check(b, k, module)
		return err
	})
	if err != nil {
		unmap()
		return nil, nil, err
	}
	released := false
	return body, func() {
		if !released {
			released = true
			unmap()
		}
	}, nil
}

// Forget removes the file of kind k for key.
func (d Dir) Forget(k Kind, key string) {
	os.Remove(d.Path(k, key))
}

// Exists reports whether the file of kind k for key exists, without checking it.
func (d Dir) Exists(k Kind, key string) bool {
	_, err := os.Stat(d.Path(k, key))
	return err == nil
}

// IsMissing reports whether err says there is no such file.
func IsMissing(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// IsUntrusted reports whether err says the file was refused by the check (and should be made
// again), rather than missing or unreadable.
func IsUntrusted(err error) bool { return errors.Is(err, ErrDamaged) || errors.Is(err, ErrForeign) }

// writeWhole writes parts to path as one file, under a temporary name renamed into place.
func writeWhole(path string, parts ...[]byte) error {
	f, err := create(path)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if _, err = f.Write(p); err != nil {
			break
		}
	}
	return finish(f, path, err)
}

func create(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
}

// finish closes a temporary file and renames it to path, or removes it after an error.
func finish(f *os.File, path string, err error) error {
	if err = errors.Join(err, f.Close()); err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
