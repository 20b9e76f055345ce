package hook

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/bindingctx"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/lease"
	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
)

// leaseTerm is one run's hold on the plugin's lease.
type leaseTerm struct {
	ctx      context.Context
	stop     func()
	takeover bool
}

// acquireLease decides whether this replica's run may act (docs/scaling.md). ok false: the run
// ends now with code, ExitOK when another replica holds the lease (standing down is the normal
// state of a standby, not a failure).
func acquireLease(ctx context.Context, deps Deps, l *hookenv.Lease, kubeLimit hookenv.KubeLimit, rec metrics.Recorder, plugin string, log *slog.Logger) (term leaseTerm, code int, ok bool) {
	log = log.With("lease", l.String(), "holder", l.Holder)
	if deps.NewLeaseStore == nil {
		log.Error("high availability is configured (OPENSTACK_SYNC_LEASE_NAME) but this build has no lease store")
		return term, ExitFail, false
	}
	store, err := deps.NewLeaseStore(kubeLimit)
	if err != nil {
		log.Error("cannot reach the lease: " + err.Error())
		return term, ExitFail, false
	}
	e := &lease.Elector{Store: store, Namespace: l.Namespace, Name: l.Name, Holder: l.Holder, Duration: l.Duration, Now: deps.Now, Log: log}
	res, err := e.Acquire(ctx)
	if err != nil {
		// Without knowing who holds the lease the run must not act; the next run asks again.
		log.Error("cannot tell which replica may act: " + err.Error())
		return term, ExitFail, false
	}
	if !res.Acquired {
		log.Info("Standing down: another replica holds the lease", "activeHolder", res.Holder,
			"leaseExpires", res.Until.UTC().Format(time.RFC3339))
		metrics.Add(rec, metrics.LeaseStandDowns, 1, plugin)
		return term, ExitOK, false
	}
	if res.Takeover {
		metrics.Add(rec, metrics.LeaseTakeovers, 1, plugin)
		log.Info("Holding the lease from now on; this run reconciles every CR it sees")
	} else {
		log.Debug("lease renewed")
	}
	held, stop := e.Hold(ctx)
	return leaseTerm{ctx: held, stop: stop, takeover: res.Takeover}, ExitOK, true
}

// lostLease reports, as the run's last line, that the run was stopped because the lease was lost.
func lostLease(ctx context.Context, log *slog.Logger) bool {
	cause := context.Cause(ctx)
	if !errors.Is(cause, lease.ErrLost) {
		return false
	}
	log.Error("Stopped the run: " + cause.Error() + "; another replica may act now")
	return true
}

// leaseContexts is what the run plans after taking the lease. The lease binding's own contexts only
// carry the snapshot; a takeover replaces the whole batch with one full pass over the newest
// snapshot, because the previous holder may have died between receiving an event and acting on it.
func leaseContexts(contexts []bindingctx.Context, binding string, takeover bool) []bindingctx.Context {
	if takeover {
		// Every snapshot of the newest context that carries the binding's: a shard's claims ride along.
		for i := len(contexts) - 1; i >= 0; i-- {
			if contexts[i].HasSnapshot(binding) {
				return []bindingctx.Context{bindingctx.NewContext(hookenv.LeaseBinding, bindingctx.TypeSchedule, contexts[i])}
			}
		}
		// No snapshot (a Synchronization carries objects): the batch is a full pass already.
	}
	return withoutLease(contexts)
}

func withoutLease(contexts []bindingctx.Context) []bindingctx.Context {
	out := make([]bindingctx.Context, 0, len(contexts))
	for _, c := range contexts {
		if c.Binding() != hookenv.LeaseBinding {
			out = append(out, c)
		}
	}
	return out
}
