package wasm

import (
	"cmp"
	"context"
	"errors"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/profile"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/admission"
	"github.com/openstack-sync/openstack-sync/pdk/abi"
)

// What the loader does with the files modulecache keeps about a module (the formats, their
// integrity check and the trust statement are modulecache's): which to use, what to log when one
// is refused, and when to write them. A file refused by the check is removed and made again by
// this load; one that passes the check but is not what this module makes (errCachedShape) makes
// load start over from the module's own bytes; the metadata record is checked with the rules of
// the guest's answer and compared with it before the plugin's first call (verifyRecord).

// writeRecord stores the guest's metadata answer as the module's record. Failing to write costs
// the next --config a compile, never correctness, so it is only logged.
func (p *Plugin) writeRecord(cache modulecache.Dir, digest modulecache.Digest) {
	if cache == "" || len(p.metadataJSON) == 0 {
		return
	}
	if err := cache.WriteRecord(digest, p.metadataJSON); err != nil {
		p.log.Warn("cannot write the plugin's metadata record; --config will compile the module", "error", err.Error())
	}
}

// readShaped maps the module's shaped bytes and names its lifted data when both are cached and
// pass the check; nil otherwise (a refused pair is removed by modulecache). release unmaps the
// bytes; they must not be used after, and only inside modulecache.Reading. The data file is
// checked once the module is compiled (Lifted.Check) and never read into the process.
func (p *Plugin) readShaped(cache modulecache.Dir, digest modulecache.Digest) (shaped []byte, data modulecache.Lifted, release func()) {
	b, data, release, err := cache.MapShaped(digest)
	switch {
	case err == nil:
		return b, data, release
	case modulecache.IsMissing(err):
	case modulecache.IsUntrusted(err):
		p.log.Warn("ignoring a cached shaped module that is not this module's or is damaged; shaping the module",
			"file", cache.Path(modulecache.Shaped, digest.String()), "error", err.Error())
	default:
		p.log.Warn("cannot read the cached shaped module; shaping the module", "error", err.Error())
	}
	return nil, modulecache.Lifted{}, nil
}

// writeShaped caches the module's shaped bytes and its lifted data. Failing costs the next run
// the shaping, never correctness, so it is only logged. It reports whether the data file is in
// place.
func (p *Plugin) writeShaped(cache modulecache.Dir, digest modulecache.Digest, sh admission.Shape) bool {
	if cache == "" {
		return false
	}
	if err := cache.WriteShaped(digest, sh.Module, sh.Data); err != nil {
		p.log.Warn("cannot cache the shaped module; the next run shapes it again", "error", err.Error())
		return false
	}
	return true
}

// recordedMetadata returns the module's record, raw and decoded, when there is one that passes
// the cache's check and the rules of the guest's answer, else nils; load then takes the metadata
// from it instead of starting an instance to ask the guest, and hook runs read it as --config
// does.
func (p *Plugin) recordedMetadata(cache modulecache.Dir, digest modulecache.Digest) ([]byte, *metadataMessage) {
	if cache == "" {
		return nil, nil
	}
	raw, m, err := readRecord(p.path, cache, digest)
	switch {
	case err == nil:
		return raw, m
	case modulecache.IsMissing(err):
	case modulecache.IsUntrusted(err):
		p.log.Warn("ignoring a metadata record that is not this module's or is damaged; loading the module",
			"file", cache.RecordPath(digest), "error", err.Error())
		cache.ForgetRecord(digest)
	default:
		var invalid *LoadError
		if errors.As(err, &invalid) {
			p.log.Warn("ignoring an invalid metadata record; loading the module", "error", err.Error())
		} else {
			p.log.Warn("cannot read the plugin's metadata record; loading the module", "error", err.Error())
		}
	}
	return nil, nil
}

// readRecord reads and checks the module's record.
func readRecord(path string, cache modulecache.Dir, digest modulecache.Digest) ([]byte, *metadataMessage, error) {
	raw, err := cache.ReadRecord(digest)
	if err != nil {
		return nil, nil, err
	}
	m, err := parseMetadata(path, raw)
	if err != nil {
		return nil, nil, err
	}
	return raw, m, nil
}

// ReadMetadata returns the plugin's metadata as Load would, from the module's record when one
// exists; otherwise it loads the module (which writes the record) and closes it again. The
// module's digest pin (Options.Digest or <PREFIX>_PLUGIN_SHA256) is checked either way.
func ReadMetadata(ctx context.Context, path string, opts Options) (plugin.Metadata, error) {
	o, err := opts.fromEnv()
	if err != nil {
		return plugin.Metadata{}, &LoadError{Path: path, Reason: "invalid sandbox configuration", Err: err}
	}
	if !o.NoCache {
		if dir := o.cacheDir(); dir != "" {
			if m, ok, err := metadataFromRecord(path, modulecache.Dir(dir), o); ok || err != nil {
				return m, err
			}
		}
	}
	p, err := load(ctx, path, opts)
	if err != nil {
		return plugin.Metadata{}, err
	}
	defer p.Close(ctx)
	return p.meta, nil
}

// Identify names the module at path without loading it: its digest (checked against the
// operator's pin), the cache directory its records live in and the metadata its record holds, as
// Load would report it under the hook's profile. Without a cache directory or a record that passes
// the cache's check it fails: the caller then loads the module.
func Identify(ctx context.Context, path string, opts Options) (plugin.Metadata, modulecache.Digest, modulecache.Dir, error) {
	o, err := opts.fromEnv()
	if err != nil {
		return plugin.Metadata{}, modulecache.Digest{}, "", err
	}
	dir := o.cacheDir()
	if o.NoCache || dir == "" {
		return plugin.Metadata{}, modulecache.Digest{}, "", errors.New("no cache directory")
	}
	cache := modulecache.Dir(dir)
	digest, _, err := admission.HashModule(path)
	if err != nil {
		return plugin.Metadata{}, digest, "", err
	}
	_, m, err := readRecord(path, cache, digest)
	if err != nil {
		return plugin.Metadata{}, digest, "", err
	}
	prefix := cmp.Or(o.EnvPrefix, m.EnvPrefix)
	pin, source := o.Digest, "configured digest"
	if pin == "" {
		pin, _ = o.LookupEnv(prefix + DigestEnvSuffix)
		source = prefix + DigestEnvSuffix
	}
	if err := checkDigest(path, digest.String(), pin, source); err != nil {
		return plugin.Metadata{}, digest, "", err
	}
	prof, err := profile.Parse(lookupOr(o.LookupEnv, prefix+"_"+profile.Variable))
	if err != nil {
		return plugin.Metadata{}, digest, "", err
	}
	meta := m.metadata()
	meta.PrunePerGroup = m.pruneScopeFor(prof) == abi.PruneScopeGroup
	if o.MemoDir != "" {
		cache = modulecache.Dir(o.MemoDir)
	}
	return meta, digest, cache, nil
}

// metadataFromRecord answers from the record; ok is false when there is none to use.
func metadataFromRecord(path string, cache modulecache.Dir, o Options) (plugin.Metadata, bool, error) {
	digest, _, err := admission.HashModule(path)
	if err != nil {
		return plugin.Metadata{}, false, err
	}
	// A record that cannot be read or is not the guest's answer any more (damaged, edited, of
	// another module): the module itself decides, and load says why it was not used.
	_, m, err := readRecord(path, cache, digest)
	if err != nil {
		return plugin.Metadata{}, false, nil
	}
	prefix := m.EnvPrefix
	if o.EnvPrefix != "" {
		prefix = o.EnvPrefix
	}
	if prefix == "" {
		return plugin.Metadata{}, false, &LoadError{Path: path, Reason: "metadata: env_prefix is empty"}
	}
	pin, source := o.Digest, "configured digest"
	if pin == "" {
		pin, _ = o.LookupEnv(prefix + DigestEnvSuffix)
		source = prefix + DigestEnvSuffix
	}
	if err := checkDigest(path, digest.String(), pin, source); err != nil {
		return plugin.Metadata{}, false, err
	}
	return m.metadata(), true, nil
}

// recordFile is the record's path for a module file, for tests and tools.
func recordFile(cacheDir, modulePath string) (string, error) {
	digest, _, err := admission.HashModule(modulePath)
	if err != nil {
		return "", err
	}
	return modulecache.Dir(cacheDir).RecordPath(digest), nil
}
