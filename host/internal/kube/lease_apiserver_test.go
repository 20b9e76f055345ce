//go:build e2e

package kube_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/kube"
	"github.com/openstack-sync/openstack-sync/host/internal/lease"
)

// TestLeasesAgainstAPIServer runs the lease election through the real API server's Leases: its
// 404 and 409 answers are what the election's not-found and conflict rules rely on, so replicas
// racing for one lease leave exactly one acting. It belongs to the e2e tier (build tag e2e).
func TestLeasesAgainstAPIServer(t *testing.T) {
	kubeconfig := cmp.Or(os.Getenv("OPENSTACK_SYNC_TEST_KUBECONFIG"), os.Getenv("E2E_KUBECONFIG"))
	if kubeconfig == "" {
		t.Fatal("the e2e tier needs a real API server: set E2E_KUBECONFIG (hack/e2e.sh does) or OPENSTACK_SYNC_TEST_KUBECONFIG")
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	c, err := kube.New(kube.Limit{})
	require.NoError(t, err)
	store := c.Leases()
	ctx := context.Background()
	const ns = "default"
	name := fmt.Sprintf("lease-test-%d", time.Now().UnixNano())

	_, err = store.Get(ctx, ns, name)
	require.ErrorIs(t, err, lease.ErrNotFound)

	start := time.Now().Truncate(time.Microsecond)
	elector := func(holder string, at time.Time) *lease.Elector {
		return &lease.Elector{Store: store, Namespace: ns, Name: name, Holder: holder, Duration: 40 * time.Second,
			Now: func() time.Time { return at }}
	}
	// Eight replicas race for the free lease: the API server's 409 leaves one winner.
	var wg sync.WaitGroup
	results := make([]lease.Result, 8)
	for i := range results {
		wg.Go(func() {
			var err error
			results[i], err = elector(fmt.Sprintf("pod-%d", i), start).Acquire(ctx)
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	rec, err := store.Get(ctx, ns, name)
	require.NoError(t, err)
	winners := 0
	for _, r := range results {
		if r.Acquired {
			winners++
			assert.True(t, r.Takeover)
		} else {
			assert.Equal(t, rec.Holder, r.Holder)
		}
	}
	assert.Equal(t, 1, winners)
	assert.Equal(t, 40*time.Second, rec.Duration)
	assert.True(t, rec.RenewTime.Equal(start), "renewTime %s round-trips as MicroTime", rec.RenewTime)

	// The holder renews; a standby stands down until a lease duration after that renewal.
	later := start.Add(30 * time.Second)
	res, err := elector(rec.Holder, later).Acquire(ctx)
	require.NoError(t, err)
	assert.Equal(t, lease.Result{Acquired: true}, res)
	res, err = elector("pod-new", later.Add(39*time.Second)).Acquire(ctx)
	require.NoError(t, err)
	assert.False(t, res.Acquired)
	assert.True(t, res.Until.Equal(later.Add(40*time.Second)), "until %s", res.Until)
	res, err = elector("pod-new", later.Add(40*time.Second)).Acquire(ctx)
	require.NoError(t, err)
	assert.Equal(t, lease.Result{Acquired: true, Takeover: true}, res)
	after, err := store.Get(ctx, ns, name)
	require.NoError(t, err)
	assert.Equal(t, "pod-new", after.Holder)
	assert.Equal(t, rec.Transitions+1, after.Transitions)

	// An update at a stale version is a conflict, not an overwrite.
	_, err = store.Update(ctx, ns, name, rec)
	assert.ErrorIs(t, err, lease.ErrConflict)
}
