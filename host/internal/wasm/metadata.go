package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// The metadata record lets `hook --config` answer without compiling or instantiating the module
// (shell-operator runs --config for every hook at start-up, and compiling even from the cache
// costs ~60 ms and ~60 MiB). Every Load that reads the metadata from the sandboxed guest writes
// the guest's own answer to <cache dir>/metadata/v<ABI>-<sha256 of the module>.json; ReadMetadata
// hashes the module and reads that record. Keyed by the module's digest, a record can only ever
// describe the exact bytes it was read from: a changed module is a new digest and a miss. A
// missing or unreadable record falls back to a full Load, which writes it. The record is checked
// with the same rules as the guest's answer, so it cannot widen what a module may declare.
const metadataDir = "metadata"

func recordPath(cacheDir, digest string) string {
	return filepath.Join(cacheDir, metadataDir, "v"+strconv.Itoa(ABIVersion)+"-"+digest+".json")
}

// writeRecord stores the guest's metadata answer next to the compilation cache. Failing to write
// costs the next --config a compile, never correctness, so it is only logged.
func (p *Plugin) writeRecord(cacheDir, digest string) {
	if cacheDir == "" || len(p.metadataJSON) == 0 {
		return
	}
	path := recordPath(cacheDir, digest)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, p.metadataJSON) {
		return
	}
	// Written whole, then renamed: a concurrent reader sees the old state or the record.
	err := writeCacheFile(path, ".record-*", p.metadataJSON)
	if err != nil {
		p.log.Warn("cannot write the plugin's metadata record; --config will compile the module", "error", err.Error())
	}
}

// recordedMetadata returns the module's record, raw and decoded, when there is one that passes
// the rules of the guest's answer, else nils; load then takes the metadata from it instead of starting an instance
// to ask the guest, and hook runs read it as --config does.
func (p *Plugin) recordedMetadata(cacheDir, digest string) ([]byte, *metadataMessage) {
	if cacheDir == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(recordPath(cacheDir, digest))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			p.log.Warn("cannot read the plugin's metadata record; loading the module", "error", err.Error())
		}
		return nil, nil
	}
	m, err := parseMetadata(p.path, raw)
	if err != nil {
		p.log.Warn("ignoring an invalid metadata record; loading the module", "error", err.Error())
		return nil, nil
	}
	return raw, m
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
			if m, ok, err := readRecord(path, dir, o); ok || err != nil {
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

// readRecord answers from the record; ok is false when there is none to use.
func readRecord(path, cacheDir string, o Options) (plugin.Metadata, bool, error) {
	digest, err := hashModule(path)
	if err != nil {
		return plugin.Metadata{}, false, err
	}
	// A record that cannot be read or is not the guest's answer any more (truncated, edited):
	// the module itself decides, and load says why it was not used.
	raw, err := os.ReadFile(recordPath(cacheDir, digest))
	if err != nil {
		return plugin.Metadata{}, false, nil
	}
	m, err := parseMetadata(path, raw)
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
	if err := checkDigest(path, digest, pin, source); err != nil {
		return plugin.Metadata{}, false, err
	}
	return m.metadata(), true, nil
}

// hashModule is the module's sha256 in hex, as readModule returns it, read through a small
// buffer: --config needs only the digest, and holding the 4 MB module would cost it a garbage
// collection (the heap's first goal is 4 MiB) with its threads, a third of its CPU time.
func hashModule(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", &LoadError{Path: path, Reason: "cannot read the module", Err: err}
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, f, make([]byte, 64<<10)); err != nil {
		return "", &LoadError{Path: path, Reason: "cannot read the module", Err: err}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// recordFile is the record's path for a module file, for tests and tools.
func recordFile(cacheDir, modulePath string) (string, error) {
	digest, err := hashModule(modulePath)
	if err != nil {
		return "", err
	}
	return recordPath(cacheDir, digest), nil
}
