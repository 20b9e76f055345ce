package wasm

import (
	"bytes"
	"context"
	"errors"
	"io/fs"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// The metadata record lets `hook --config` answer without compiling or instantiating the module
// (shell-operator runs --config for every hook at start-up, and compiling even from the cache
// costs ~60 ms and ~60 MiB), and a hook run skip the instance it would start only to ask. Every
// Load that reads the metadata from the sandboxed guest keeps the guest's own answer as the
// module's record (modulecache.Record: tied to the module's digest, so a record can only ever
// describe the exact bytes it was read from, and a record of another module, or a damaged one,
// is refused and written anew). A missing or refused record falls back to a full Load, which
// writes it. The record is checked with the same rules as the guest's answer, and a hook run that
// took its metadata from the record compares it with the guest's own answer on the first instance
// it starts, before any call of the plugin (verifyRecord): the grants in force are the module's,
// whatever the cache directory holds.

// writeRecord stores the guest's metadata answer next to the compilation cache. Failing to write
// costs the next --config a compile, never correctness, so it is only logged.
func (p *Plugin) writeRecord(cache modulecache.Dir, digest modulecache.Digest) {
	if cache == "" || len(p.metadataJSON) == 0 {
		return
	}
	if old, err := cache.Read(modulecache.Record, digest.String(), digest); err == nil && bytes.Equal(old, p.metadataJSON) {
		return
	}
	if err := cache.Write(modulecache.Record, digest.String(), digest, p.metadataJSON); err != nil {
		p.log.Warn("cannot write the plugin's metadata record; --config will compile the module", "error", err.Error())
	}
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
			"file", cache.Path(modulecache.Record, digest.String()), "error", err.Error())
		cache.Forget(modulecache.Record, digest.String())
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
	if cache == "" {
		return nil, nil, fs.ErrNotExist
	}
	raw, err := cache.Read(modulecache.Record, digest.String(), digest)
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

// metadataFromRecord answers from the record; ok is false when there is none to use.
func metadataFromRecord(path string, cache modulecache.Dir, o Options) (plugin.Metadata, bool, error) {
	digest, _, err := hashModule(path)
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
	digest, _, err := hashModule(modulePath)
	if err != nil {
		return "", err
	}
	return modulecache.Dir(cacheDir).Path(modulecache.Record, digest.String()), nil
}
