package lease_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/lease"
	"github.com/openstack-sync/openstack-sync/host/internal/lease/leasetest"
)

const ns, name = "ops", "oso-widgets"

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func elector(s lease.Store, holder string, now time.Time) *lease.Elector {
	return &lease.Elector{Store: s, Namespace: ns, Name: name, Holder: holder, Duration: 90 * time.Second,
		Now: func() time.Time { return now }}
}

func TestAcquire(t *testing.T) {
	tests := []struct {
		name     string
		existing *lease.Record
		at       time.Time
		want     lease.Result
		holder   string
		// transitions counts hand-overs between holders, as client-go's leader election does.
		transitions int32
	}{
		{name: "a free lease is created and taken over", at: t0,
			want: lease.Result{Acquired: true, Takeover: true}, holder: "pod-a"},
		{name: "the holder renews and keeps acting without a takeover", at: t0.Add(80 * time.Second),
			existing: &lease.Record{Holder: "pod-a", Duration: 90 * time.Second, RenewTime: t0},
			want:     lease.Result{Acquired: true}, holder: "pod-a"},
		{name: "the holder renews even after expiry: nobody else acted meanwhile", at: t0.Add(time.Hour),
			existing: &lease.Record{Holder: "pod-a", Duration: 90 * time.Second, RenewTime: t0},
			want:     lease.Result{Acquired: true}, holder: "pod-a"},
		{name: "another live holder makes the run stand down", at: t0.Add(89 * time.Second),
			existing: &lease.Record{Holder: "pod-b", Duration: 90 * time.Second, RenewTime: t0, Transitions: 4},
			want:     lease.Result{Holder: "pod-b", Until: t0.Add(90 * time.Second)}, holder: "pod-b", transitions: 4},
		{name: "an expired holder is taken over", at: t0.Add(90 * time.Second),
			existing: &lease.Record{Holder: "pod-b", Duration: 90 * time.Second, RenewTime: t0, Transitions: 4},
			want:     lease.Result{Acquired: true, Takeover: true}, holder: "pod-a", transitions: 5},
		{name: "a released lease is taken over at once", at: t0.Add(time.Second),
			existing: &lease.Record{Holder: "", Duration: 90 * time.Second, RenewTime: t0},
			want:     lease.Result{Acquired: true, Takeover: true}, holder: "pod-a", transitions: 1},
		{name: "the holder's own duration decides expiry", at: t0.Add(100 * time.Second),
			existing: &lease.Record{Holder: "pod-b", Duration: 120 * time.Second, RenewTime: t0},
			want:     lease.Result{Holder: "pod-b", Until: t0.Add(120 * time.Second)}, holder: "pod-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &leasetest.Store{}
			if tt.existing != nil {
				s.Set(ns, name, *tt.existing)
			}
			got, err := elector(s, "pod-a", tt.at).Acquire(context.Background())
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			rec, err := s.Get(context.Background(), ns, name)
			require.NoError(t, err)
			assert.Equal(t, tt.holder, rec.Holder)
			assert.Equal(t, tt.transitions, rec.Transitions)
			if got.Acquired {
				assert.Equal(t, tt.at, rec.RenewTime, "an acquired lease is renewed now")
				assert.Equal(t, 90*time.Second, rec.Duration)
			} else {
				assert.Equal(t, *tt.existing, withoutVersion(rec), "standing down writes nothing")
			}
		})
	}
}

func withoutVersion(r lease.Record) lease.Record { r.ResourceVersion = ""; return r }

// TestOneWinnerOfARace: replicas racing for a free or expired lease all write at the version they
// read; the API server's conflict answer lets exactly one act.
func TestOneWinnerOfARace(t *testing.T) {
	for _, existing := range []*lease.Record{nil, {Holder: "pod-gone", Duration: 90 * time.Second, RenewTime: t0.Add(-time.Hour)}} {
		s := &leasetest.Store{}
		if existing != nil {
			s.Set(ns, name, *existing)
		}
		const replicas = 8
		results := make([]lease.Result, replicas)
		var wg sync.WaitGroup
		for i := range replicas {
			wg.Go(func() {
				var err error
				results[i], err = elector(s, string(rune('a'+i)), t0).Acquire(context.Background())
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		rec, err := s.Get(context.Background(), ns, name)
		require.NoError(t, err)
		var acting []string
		for i, r := range results {
			if r.Acquired {
				acting = append(acting, string(rune('a'+i)))
			} else {
				assert.Equal(t, rec.Holder, r.Holder, "a loser names the winner")
			}
		}
		assert.Equal(t, []string{rec.Holder}, acting, "exactly the holder acts")
	}
}

func TestAcquireErrors(t *testing.T) {
	s := &leasetest.Store{Fail: errors.New("connection refused")}
	_, err := elector(s, "pod-a", t0).Acquire(context.Background())
	assert.EqualError(t, err, "reading lease ops/oso-widgets: connection refused")
}

// flaky fails the updates it is told to, then behaves.
type flaky struct {
	*leasetest.Store
	mu       sync.Mutex
	failures int
}

func (f *flaky) Update(ctx context.Context, namespace, name string, r lease.Record) (lease.Record, error) {
	f.mu.Lock()
	fail := f.failures > 0
	if fail {
		f.failures--
	}
	f.mu.Unlock()
	if fail {
		return lease.Record{}, errors.New("timeout")
	}
	return f.Store.Update(ctx, namespace, name, r)
}

// TestHold: a run renews the lease while it lasts; it is stopped when another replica takes the
// lease, and when renewals keep failing until the lease could expire, before another replica may
// act. The durations are short so the renewals happen within the test; nothing asserts a time.
func TestHold(t *testing.T) {
	const d = 300 * time.Millisecond
	newElector := func(s lease.Store) *lease.Elector {
		return &lease.Elector{Store: s, Namespace: ns, Name: name, Holder: "pod-a", Duration: d}
	}

	t.Run("renews until stopped", func(t *testing.T) {
		s := &leasetest.Store{}
		e := newElector(s)
		_, err := e.Acquire(context.Background())
		require.NoError(t, err)
		held, stop := e.Hold(context.Background())
		before, _ := s.Get(context.Background(), ns, name)
		require.Eventually(t, func() bool {
			r, _ := s.Get(context.Background(), ns, name)
			return r.RenewTime.After(before.RenewTime) && r.Holder == "pod-a"
		}, 10*time.Second, 10*time.Millisecond)
		stop()
		assert.ErrorIs(t, held.Err(), context.Canceled, "stop cancels the run's context")
		assert.NotErrorIs(t, context.Cause(held), lease.ErrLost, "a stopped hold is not a lost lease")
		writes := s.Writes()
		time.Sleep(2 * d)
		assert.Equal(t, writes, s.Writes(), "no renewal after stop")
	})

	t.Run("stops the run when another replica holds the lease", func(t *testing.T) {
		s := &leasetest.Store{}
		e := newElector(s)
		_, err := e.Acquire(context.Background())
		require.NoError(t, err)
		held, stop := e.Hold(context.Background())
		defer stop()
		s.Set(ns, name, lease.Record{Holder: "pod-b", Duration: d, RenewTime: time.Now()})
		<-held.Done()
		assert.ErrorIs(t, context.Cause(held), lease.ErrLost)
		assert.ErrorContains(t, context.Cause(held), "held by pod-b")
	})

	t.Run("stops the run when renewals fail for the lease's duration", func(t *testing.T) {
		s := &flaky{Store: &leasetest.Store{}, failures: 1 << 30}
		e := newElector(s)
		s.Set(ns, name, lease.Record{Holder: "pod-a", Duration: d, RenewTime: time.Now()})
		held, stop := e.Hold(context.Background())
		defer stop()
		<-held.Done()
		assert.ErrorIs(t, context.Cause(held), lease.ErrLost)
		assert.ErrorContains(t, context.Cause(held), "renewals failed since")
	})

	t.Run("a passing renewal failure keeps the lease", func(t *testing.T) {
		s := &flaky{Store: &leasetest.Store{}, failures: 1}
		e := newElector(s)
		s.Set(ns, name, lease.Record{Holder: "pod-a", Duration: d, RenewTime: time.Now()})
		held, stop := e.Hold(context.Background())
		before := s.Writes()
		require.Eventually(t, func() bool { return s.Writes() > before }, 10*time.Second, 10*time.Millisecond,
			"the renewal after the failure succeeds")
		assert.NoError(t, held.Err())
		stop()
	})
}
