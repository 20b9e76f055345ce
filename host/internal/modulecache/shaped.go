package modulecache

import (
	"io/fs"
)

// The shaped module (kind Shaped) is a module as the host compiles it, kept so that a hook run
// that finds it need not shape the module again (host/internal/wasm/admission: every section
// walked, the data segments merged and lifted out, the 4 MB module copied onto the heap) only to
// get the bytes the compilation cache is keyed by: ~8-12 ms of CPU and ~1,400 page faults in a
// fresh process. Its lifted data (kind Data, data.go) is its other half: the two are written and
// forgotten together, the data first, so a shaped module found here always has its data beside
// it. A pair that passes the check and still does not compile, validate or fit (a file that is
// not what this host wrote) is the loader's to refuse: it forgets both and shapes the module.

// errNoData is a shaped module without its data: both are made again.
var errNoData = &fs.PathError{Op: "open", Path: "the shaped module's data", Err: fs.ErrNotExist}

// MapShaped maps module's shaped bytes once checked, with the lifted data beside them. release
// unmaps them; the bytes must not be used after, and only inside Reading. A shaped module without
// its data is forgotten and reported missing; one that fails the check is forgotten and reported
// untrusted (IsUntrusted), so the load that shapes the module again writes both anew.
func (d Dir) MapShaped(module Digest) (shaped []byte, data Lifted, release func(), err error) {
	if d == "" {
		return nil, Lifted{}, nil, fs.ErrNotExist
	}
	b, release, err := d.Map(Shaped, module.String(), module)
	if err != nil {
		if IsUntrusted(err) {
			d.ForgetShaped(module)
		}
		return nil, Lifted{}, nil, err
	}
	if !d.Exists(Data, module.String()) {
		release()
		d.ForgetShaped(module)
		return nil, Lifted{}, nil, errNoData
	}
	return b, d.Lifted(module), release, nil
}

// WriteShaped writes module's shaped bytes and its lifted data (an empty body when it has none),
// each whole and then renamed, the data first.
func (d Dir) WriteShaped(module Digest, shaped, data []byte) error {
	if err := d.Write(Data, module.String(), module, data); err != nil {
		return err
	}
	return d.Write(Shaped, module.String(), module, shaped)
}

// ForgetShaped removes module's shaped bytes and its data.
func (d Dir) ForgetShaped(module Digest) {
	d.Forget(Data, module.String())
	d.Forget(Shaped, module.String())
}
