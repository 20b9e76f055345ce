package hook

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/bindingctx"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/planner"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/replay"
	"github.com/openstack-sync/openstack-sync/host/internal/runner"
)

// Identity is what a loader knows of a module without loading it (Deps.Identify).
type Identity struct {
	// Meta is the plugin's metadata as Load would report it.
	Meta plugin.Metadata
	// Module is the module's sha256, checked against the operator's pin; Cache is the directory
	// its records live in.
	Module modulecache.Digest
	Cache  modulecache.Dir
}

// MsgReplayed is the line of a run answered by replaying the last converged run.
const MsgReplayed = "replayed a converged run: every answer unchanged"

// MsgReplayMissed is the line of a run whose replay found something changed; the full run follows.
const MsgReplayMissed = "not replaying the last converged run; running the plugin"

// MsgReplayTooLarge is the line of a converged run whose record would pass its bound.
const MsgReplayTooLarge = "The run is too large to record for a replay; every run of this plugin runs the module until it fits: raise memory.crs to this plugin's CR count (the chart's OPENSTACK_SYNC_REPLAY_MAX_MIB follows it, up to 32 MiB)"

// replayRun is a run that a replay may stand for, or that may be recorded for the next: its key,
// its CRs' digest and, after an attempt that missed, the sessions it opened.
type replayRun struct {
	cache    modulecache.Dir
	prefix   string
	module   modulecache.Digest
	meta     plugin.Metadata
	key      [sha256.Size]byte
	crs      [sha256.Size]byte
	contexts [sha256.Size]byte
	crCount  int
	maxBytes int
	now      func() time.Time
	// attempted: requests were re-sent (the ahead connect is then not needed); connector and
	// sessions serve the full run.
	attempted bool
	connector plugin.Connector
	sessions  map[plugin.Credentials]plugin.Session
	// skip says why the run is neither replayed nor recorded ("": it may be).
	skip string
	// checkedProfiles: otherProfileCRs ran and found nothing.
	checkedProfiles bool
	// recorder and lines watch the full run.
	recorder *replay.Recorder
	lines    replay.Lines
}

// startReplay decides whether the run may be replayed, and replays it when it can: hit is true
// when the run is done (its exit code in code). Otherwise it returns the run's replay state for
// recording (nil when the run is not one a replay may stand for: the replay is off, the plugin is
// not deterministic or not known without loading it, a lease or a shard decides what the run
// reconciles, or a resumed pass).
func startReplay(ctx context.Context, deps Deps, f flags, path string, contexts []bindingctx.Context, kube *lazyKube,
	obs *observer, lookupEnv hookenv.LookupFunc, root *slog.Logger) (rr *replayRun, code int, hit bool) {
	if deps.Identify == nil || deps.Resume != nil {
		return nil, 0, false
	}
	settings, err := replay.Settings(lookupEnv)
	if err != nil {
		root.Warn("the run replay is off: " + err.Error())
		return nil, 0, false
	}
	if settings.MaxAge <= 0 {
		return nil, 0, false
	}
	id, err := deps.Identify(ctx, f.plugin, LoadOptions{EnvPrefix: f.envPrefix, LookupEnv: lookupEnv, Logger: root})
	if err != nil || id.Cache == "" {
		return nil, 0, false
	}
	meta, err := completeMetadata(f, id.Meta)
	if err != nil || meta.Probe {
		return nil, 0, false
	}
	if enabled, err := hookenv.Enabled(lookupEnv, meta.EnvPrefix); err != nil || !enabled {
		return nil, 0, false
	}
	// From here on a run that is not replayed removes the record, which then no longer describes
	// the last run; skip says why this run is not one to record or replay.
	rr = &replayRun{cache: id.Cache, prefix: meta.EnvPrefix, module: id.Module, meta: meta, maxBytes: settings.MaxBytes}
	log := root.With("plugin", meta.Name)
	cfg, err := hookenv.Load(lookupEnv, meta.EnvPrefix, meta.BindingName)
	switch {
	case !meta.Deterministic:
		rr.skip = "the plugin does not declare that it is deterministic"
	case err != nil:
		rr.skip = "the hook's settings: " + err.Error()
	case cfg.Lease != nil:
		rr.skip = "a lease decides which replica acts"
	case cfg.Shard != nil:
		rr.skip = "a shard's prune depends on the other shards' CRs"
	}
	if rr.skip == "" {
		if rr.contexts, err = replay.FileDigest(path); err != nil {
			rr.skip = "the binding context: " + err.Error()
		}
	}
	if rr.skip != "" {
		return rr, 0, false
	}
	environ := deps.Environ
	if environ == nil {
		environ = os.Environ
	}
	now := time.Now
	if deps.Now != nil {
		now = deps.Now
	}
	rr.now = now
	rr.key = replay.Key(replay.Identity{Module: id.Module, Prefix: meta.EnvPrefix, Binding: meta.BindingName,
		Environ: environ, Lookup: lookupEnv})
	rec, recErr := id.Cache.ReadReplay(meta.EnvPrefix, id.Module)
	if recErr == nil && rec.Key == rr.key && rec.Contexts == rr.contexts {
		// The same bytes under the same settings: the same plan, so the same CRs, without
		// reading one of them.
		rr.crs, rr.crCount = rec.CRs, rec.CRCount
	} else {
		plan, err := planner.Build(contexts, planOptions(cfg, meta, log))
		if err != nil {
			rr.skip = "the binding context: " + err.Error()
			return rr, 0, false
		}
		if rr.crs, err = replay.CRDigest(plan); err != nil {
			rr.skip = err.Error()
			return rr, 0, false
		}
		rr.crCount = len(plan.Reconcile)
	}
	switch {
	case modulecache.IsMissing(recErr):
		return rr, 0, false
	case recErr != nil:
		log.Debug(MsgReplayMissed, "reason", "the record cannot be used: "+recErr.Error())
		return rr, 0, false
	}
	if why := replay.Check(rec, rr.key, rr.crs, now(), settings.MaxAge); why != "" {
		log.Debug(MsgReplayMissed, "reason", why)
		return rr, 0, false
	}
	// The run's own refusals come before any request, as in the full run.
	if otherProfileCRs(ctx, kube, cfg, log) {
		return nil, ExitFail, true
	}
	rr.checkedProfiles = true
	limit, sources, err := loadConnection(lookupEnv, meta.EnvPrefix)
	if err != nil {
		return nil, 0, false
	}
	rr.connector = newConnector(deps, kube, meta, limit, sources, obs, root)
	out := replay.Attempt(ctx, rr.connector, rec)
	rr.attempted, rr.sessions = true, out.Sessions
	groups := make([]string, 0, len(out.Groups))
	for _, g := range out.Groups {
		groups = append(groups, g.String())
	}
	if out.Miss != "" {
		metrics.Add(obs.recorder(), metrics.Replays, 1, meta.Name, "miss")
		log.Info(MsgReplayMissed, "reason", out.Miss, "requests", out.Requests)
		return rr, 0, false
	}
	obs.plugin = meta.Name
	metrics.Add(obs.recorder(), metrics.Replays, 1, meta.Name, "hit")
	replay.Repeat(ctx, log, rec.Lines)
	log.Info(MsgReplayed, "kind", cfg.Kind, "crs", rec.CRCount, "requests", out.Requests, "groups", groups,
		"recorded_at", time.Unix(rec.At, 0).UTC().Format(time.RFC3339))
	return nil, ExitOK, true
}

// watch wraps the full run's connector and logger so that the run can be recorded.
func (rr *replayRun) watch(c plugin.Connector, log *slog.Logger) (plugin.Connector, *slog.Logger) {
	if rr == nil || rr.skip != "" {
		return c, log
	}
	rr.recorder = replay.NewRecorder(c)
	return rr.recorder, rr.lines.Wrap(log)
}

// finish records the full run when a replay may stand for its next run, and forgets the record
// otherwise: the record on disk describes an earlier run.
func (rr *replayRun) finish(p plugin.Plugin, meta plugin.Metadata, code int, kube *lazyKube, log *slog.Logger) {
	if rr == nil {
		return
	}
	why := rr.skip
	switch {
	case why != "":
	case code != ExitOK:
		why = "the run failed"
	case kube.writes.Load() > 0:
		why = "the run wrote to Kubernetes"
	case !meta.Equal(rr.meta):
		why = "the plugin's metadata is not its record's"
	case concurrent(p):
		why = "the plugin reconciles a group's CRs concurrently"
	case memoMisses(p) > 0:
		why = fmt.Sprintf("the convergence memo had no record for %d reconciles: the next run, answered from the records this one made, reads less", memoMisses(p))
	default:
		why = cmp.Or(rr.recorder.Spoiled(), rr.lines.Spoiled())
	}
	if why != "" {
		log.Debug("not recording the run for a replay", "reason", why)
		if rr.cache.Exists(modulecache.Replay, rr.prefix) {
			rr.cache.Forget(modulecache.Replay, rr.prefix)
		}
		return
	}
	rec := modulecache.ReplayRecord{Key: rr.key, CRs: rr.crs, Contexts: rr.contexts, At: rr.now().Unix(), CRCount: rr.crCount,
		Groups: rr.recorder.Groups(), Lines: rr.lines.Recorded()}
	if err := rr.cache.WriteReplay(rr.prefix, rr.module, rec, rr.maxBytes); err != nil {
		var tooLarge *modulecache.ReplayTooLargeError
		if errors.As(err, &tooLarge) {
			// Every later run of this plugin then runs the module: a site that outgrew the room the
			// chart keeps for the record (memory.crs) should hear of it, as it does of a full memo.
			log.Warn(MsgReplayTooLarge, "bytes", tooLarge.Size, "boundMiB", fmt.Sprintf("%.1f", float64(tooLarge.Max)/(1<<20)),
				"crs", rr.crCount)
			return
		}
		log.Debug("not recording the run for a replay", "reason", err.Error())
		return
	}
	log.Debug("recorded the converged run for a replay", "requests", rr.recorder.Requests(), "crs", rr.crCount)
}

func memoMisses(p plugin.Plugin) int {
	if m, ok := p.(plugin.MemoReporter); ok {
		return m.MemoMisses()
	}
	return 0
}

func concurrent(p plugin.Plugin) bool {
	c, ok := p.(plugin.Concurrent)
	return ok && c.ReconcileConcurrency() > 1
}

var _ runner.Kube = (*lazyKube)(nil)
