package wasm

import (
	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
)

// The shaped module is kept next to the compiled code, its lifted data (data.go) beside it
// (modulecache.Shaped, modulecache.Data). A hook run that finds the module's metadata record (this
// node loaded the same bytes before) would shape them again (structure.go: every section walked,
// the data segments merged and lifted out, the 4 MB module copied onto the heap), only to get the
// bytes the compilation cache is keyed by: ~8-12 ms of CPU and ~1,400 page faults in a fresh
// process. It maps the shaped bytes instead. They are used only once modulecache checked them
// against the module's digest and for damage; anything else is ignored and the module is shaped
// again. A cached shape that passes that check and still does not compile, validate or fit (a
// file that is not what this host wrote) makes load start over from the module (errCachedShape).

// forgetShaped removes the module's shaped bytes and its data, so that the next load shapes the
// module again and writes both.
func forgetShaped(cache modulecache.Dir, digest modulecache.Digest) {
	cache.Forget(modulecache.Data, digest.String())
	cache.Forget(modulecache.Shaped, digest.String())
}

// readShaped maps the module's shaped bytes when they are cached and pass the check, and says
// whether its lifted data is beside them; nil otherwise. release unmaps them; the bytes must not
// be used after, and only inside modulecache.Reading. The data file is checked once the module is
// compiled (checkData) and never read into the process (data.go).
func (p *Plugin) readShaped(cache modulecache.Dir, digest modulecache.Digest) (shaped []byte, data liftedData, release func()) {
	if cache == "" {
		return nil, liftedData{}, nil
	}
	b, release, err := cache.Map(modulecache.Shaped, digest.String(), digest)
	switch {
	case err == nil:
	case modulecache.IsMissing(err):
		return nil, liftedData{}, nil
	case modulecache.IsUntrusted(err):
		// Removed, so that this load writes it anew.
		p.log.Warn("ignoring a cached shaped module that is not this module's or is damaged; shaping the module",
			"file", cache.Path(modulecache.Shaped, digest.String()), "error", err.Error())
		forgetShaped(cache, digest)
		return nil, liftedData{}, nil
	default:
		p.log.Warn("cannot read the cached shaped module; shaping the module", "error", err.Error())
		return nil, liftedData{}, nil
	}
	if !cache.Exists(modulecache.Data, digest.String()) {
		// A shaped module is only used with its data: both are written anew.
		release()
		forgetShaped(cache, digest)
		return nil, liftedData{}, nil
	}
	return b, liftedData{cache: cache, digest: digest}, release
}

// writeShaped caches the module's shaped bytes and its lifted data (an empty body when it has
// none), each written whole and then renamed, the data first: a shaped module found in the cache
// always has its data beside it. Failing costs the next run the shaping, never correctness, so it
// is only logged. It reports whether the data file is in place.
func (p *Plugin) writeShaped(cache modulecache.Dir, digest modulecache.Digest, sh shape) bool {
	if cache == "" {
		return false
	}
	err := cache.Write(modulecache.Data, digest.String(), digest, sh.data)
	if err == nil {
		err = cache.Write(modulecache.Shaped, digest.String(), digest, sh.module)
	}
	if err != nil {
		p.log.Warn("cannot cache the shaped module; the next run shapes it again", "error", err.Error())
		return false
	}
	return true
}
