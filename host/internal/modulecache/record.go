package modulecache

import (
	"bytes"
	"io/fs"
)

// The metadata record (kind Record) is the module's own answer to its metadata entry point, so
// that `hook --config` answers without compiling or instantiating the module (shell-operator runs
// --config for every hook at start-up, and compiling even from the cache costs ~60 ms and
// ~60 MiB), and a hook run skips the instance it would start only to ask. The record carries the
// plugin's grants, so this package's check is not the whole fence: the loader checks a record
// with the same rules as the guest's answer, and compares it with the guest's own answer on the
// first instance it starts, before any call (host/internal/wasm, verifyRecord).

// ReadRecord returns module's record once checked; fs.ErrNotExist when there is none (or no
// cache directory).
func (d Dir) ReadRecord(module Digest) ([]byte, error) {
	if d == "" {
		return nil, fs.ErrNotExist
	}
	return d.Read(Record, module.String(), module)
}

// WriteRecord stores raw as module's record, unless the record already holds it.
func (d Dir) WriteRecord(module Digest, raw []byte) error {
	if old, err := d.Read(Record, module.String(), module); err == nil && bytes.Equal(old, raw) {
		return nil
	}
	return d.Write(Record, module.String(), module, raw)
}

// ForgetRecord removes module's record.
func (d Dir) ForgetRecord(module Digest) { d.Forget(Record, module.String()) }

// RecordPath is module's record's file.
func (d Dir) RecordPath(module Digest) string { return d.Path(Record, module.String()) }
