// Package lease lets exactly one replica's hooks act at a time: each plugin has a
// coordination.k8s.io Lease, and a hook run acts only while its pod holds it.
//
// A hook run is a separate process, so nothing in memory survives from one run to the next. The
// holder identity is therefore the pod (POD_NAME through the downward API), not the process: every
// run of the holding pod renews the lease and keeps it, and a run of another pod stands down until
// the holder has not renewed for a whole lease duration. A run that acquires the lease from another
// holder (or a free one) is a takeover: the other replica may have died between receiving an event
// and acting on it, so the new holder reconciles everything it sees once (Result.Takeover).
//
// Expiry compares the holder's renewTime with the local clock: a skew between nodes shortens or
// lengthens the failover time by the skew, which the lease duration (tens of seconds) dwarfs.
//
// The package sees the API server through Store, so the framework links no client-go.
package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Record is the part of a Lease's spec the election reads and writes.
type Record struct {
	Holder      string
	Duration    time.Duration
	AcquireTime time.Time
	RenewTime   time.Time
	Transitions int32
	// ResourceVersion is the version read; an update must match it (optimistic concurrency).
	ResourceVersion string
}

// ErrConflict is what a Store returns when a create finds the lease already there or an update
// finds a newer version: another replica wrote first.
var ErrConflict = errors.New("the lease changed concurrently")

// ErrNotFound is what Store.Get returns when the lease does not exist.
var ErrNotFound = errors.New("the lease does not exist")

// Store reads and writes one namespace's Leases.
type Store interface {
	Get(ctx context.Context, namespace, name string) (Record, error)
	Create(ctx context.Context, namespace, name string, r Record) (Record, error)
	Update(ctx context.Context, namespace, name string, r Record) (Record, error)
}

// Elector takes and renews one lease for one holder.
type Elector struct {
	Store     Store
	Namespace string
	Name      string
	// Holder is this replica's identity (the pod name).
	Holder string
	// Duration is how long a renewal holds the lease.
	Duration time.Duration
	// Now defaults to time.Now.
	Now func() time.Time
	Log *slog.Logger
}

// Result is the outcome of one attempt to act.
type Result struct {
	// Acquired: this replica holds the lease and may act.
	Acquired bool
	// Takeover: the lease came from another holder or was free; the run must reconcile everything.
	Takeover bool
	// Holder and Until name who holds the lease when this replica stands down.
	Holder string
	Until  time.Time
}

func (e *Elector) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// conflictRetries bounds the re-reads after a lost write race: each retry re-reads the lease, so
// a race lost to a live holder ends in a stand-down rather than another write.
const conflictRetries = 3

// Acquire takes the lease if it is free, expired or already ours, and reports who holds it if
// not. Its errors are API errors: the run cannot know who may act, so it must not act.
func (e *Elector) Acquire(ctx context.Context) (Result, error) {
	var lastErr error
	for range conflictRetries {
		res, err := e.acquireOnce(ctx)
		if !errors.Is(err, ErrConflict) {
			return res, err
		}
		lastErr = err
	}
	return Result{}, fmt.Errorf("lease %s/%s: %w %d times", e.Namespace, e.Name, lastErr, conflictRetries)
}

func (e *Elector) acquireOnce(ctx context.Context) (Result, error) {
	now := e.now()
	cur, err := e.Store.Get(ctx, e.Namespace, e.Name)
	if errors.Is(err, ErrNotFound) {
		_, err = e.Store.Create(ctx, e.Namespace, e.Name, Record{Holder: e.Holder, Duration: e.Duration, AcquireTime: now, RenewTime: now})
		if err != nil {
			return Result{}, wrap(e, "creating", err)
		}
		return Result{Acquired: true, Takeover: true}, nil
	}
	if err != nil {
		return Result{}, wrap(e, "reading", err)
	}
	next := cur
	next.Duration, next.RenewTime = e.Duration, now
	switch {
	case cur.Holder == e.Holder:
		// Nobody else wrote the lease since this pod last did: its runs were the only ones acting.
		if _, err := e.Store.Update(ctx, e.Namespace, e.Name, next); err != nil {
			return Result{}, wrap(e, "renewing", err)
		}
		return Result{Acquired: true}, nil
	case cur.Holder != "" && now.Before(cur.expiry()):
		return Result{Holder: cur.Holder, Until: cur.expiry()}, nil
	}
	next.Holder, next.AcquireTime = e.Holder, now
	next.Transitions++
	if _, err := e.Store.Update(ctx, e.Namespace, e.Name, next); err != nil {
		return Result{}, wrap(e, "taking over", err)
	}
	if e.Log != nil {
		e.Log.Info("took over the lease", "lease", e.Namespace+"/"+e.Name, "previousHolder", cur.Holder,
			"previousRenewTime", cur.RenewTime.UTC().Format(time.RFC3339))
	}
	return Result{Acquired: true, Takeover: true}, nil
}

// expiry is when a holder that stops renewing loses the lease.
func (r Record) expiry() time.Time { return r.RenewTime.Add(r.Duration) }

func wrap(e *Elector, what string, err error) error {
	if errors.Is(err, ErrConflict) {
		return err
	}
	return fmt.Errorf("%s lease %s/%s: %w", what, e.Namespace, e.Name, err)
}

// ErrLost is the cause of a Hold context cancelled because the lease was lost.
var ErrLost = errors.New("lost the lease")

// Hold renews the lease every third of its duration until ctx ends, so a run longer than the
// lease keeps it. The returned context is cancelled with cause ErrLost when another holder took
// the lease, or when renewals failed until the lease would have expired: from then on another
// replica may act, so this run must stop. stop ends the renewals.
func (e *Elector) Hold(ctx context.Context) (held context.Context, stop func()) {
	held, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		every := e.Duration / 3
		renewed := e.now()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-held.Done():
				return
			case <-t.C:
			}
			err := e.renew(held)
			switch {
			case err == nil:
				renewed = e.now()
			case errors.Is(err, ErrLost):
				cancel(err)
				return
			case !e.now().Before(renewed.Add(e.Duration - every)):
				// One more failure could outlast the lease: stop before another replica may start.
				cancel(fmt.Errorf("%w: renewals failed since %s: %v", ErrLost, renewed.UTC().Format(time.RFC3339), err))
				return
			default:
				if e.Log != nil {
					e.Log.Warn("renewing the lease failed; retrying", "lease", e.Namespace+"/"+e.Name, "error", err.Error())
				}
			}
		}
	}()
	return held, func() {
		close(done)
		<-finished
		cancel(nil)
	}
}

// renew extends the lease if this replica still holds it.
func (e *Elector) renew(ctx context.Context) error {
	for range conflictRetries {
		cur, err := e.Store.Get(ctx, e.Namespace, e.Name)
		if errors.Is(err, ErrNotFound) {
			return fmt.Errorf("%w: lease %s/%s was deleted", ErrLost, e.Namespace, e.Name)
		}
		if err != nil {
			return err
		}
		if cur.Holder != e.Holder {
			return fmt.Errorf("%w: lease %s/%s is held by %s", ErrLost, e.Namespace, e.Name, cur.Holder)
		}
		cur.Duration, cur.RenewTime = e.Duration, e.now()
		_, err = e.Store.Update(ctx, e.Namespace, e.Name, cur)
		if !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("renewing lease %s/%s: %w %d times", e.Namespace, e.Name, ErrConflict, conflictRetries)
}
