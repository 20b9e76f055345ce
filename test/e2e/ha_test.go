//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// haLease is the test's lease duration: the chart's minimum, to keep the failover short.
const haLease = 40 * time.Second

// TestHighAvailability runs two pods of a release with replicaCount 2 (two real shell-operators
// with the chart's pod environment, each its own POD_NAME) and kills the active one while CRs are
// being created: before the kill only the active pod acts and the standby stands down; after it,
// the standby takes the lease over within the lease time plus one lease run, and every CR, those
// created while nobody was active included, ends Synced for its current generation.
func TestHighAvailability(t *testing.T) {
	h := need(t)
	ctx := context.Background()
	// The suite's own operator prunes the same cloud: it must not run beside this release.
	h.stopOperator()

	r := h.installRelease(t, ctx, "ha", "openstack-sync-e2e-ha", fmt.Sprintf("replicaCount: 2\nha: {leaseDurationSeconds: %d}\n", int(haLease/time.Second)))
	leaseName := r.fullname + "-ironic-runbooks"
	crs := make([]*unstructured.Unstructured, 6)
	for i := range crs {
		crs[i] = renamed(h.examples.crs[runbooks.kind], fmt.Sprintf("-ha-%d", i), "spec", "runbookName", fmt.Sprintf("_HA_%d", i))
	}
	clean := func() {
		for _, u := range crs {
			assert.NoError(t, h.cloud.deleteRunbook(ctx, osName(u)))
		}
	}
	clean()
	t.Cleanup(func() {
		// Finalizers would keep the CRs after the pods are gone; the pods go first, or they would
		// put the finalizers back.
		r.killAll()
		for _, u := range crs {
			if cr, err := h.dyn.Resource(runbooks.gvr).Namespace(r.namespace).Get(ctx, u.GetName(), metav1.GetOptions{}); err == nil {
				cr.SetFinalizers(nil)
				_, _ = h.dyn.Resource(runbooks.gvr).Namespace(r.namespace).Update(ctx, cr, metav1.UpdateOptions{})
			}
		}
		clean()
	})

	first := r.start(t, ctx, "ha-operator-0")
	h.waitFor(t, syncWait, "the first pod to take the lease", func() (bool, string) {
		l, err := h.kube.CoordinationV1().Leases(r.namespace).Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "ha-operator-0", fmt.Sprint(l.Spec.HolderIdentity)
	})
	second := r.start(t, ctx, "ha-operator-1")
	h.waitFor(t, syncWait, "the second pod to stand down", func() (bool, string) {
		return len(second.lines(t, "Standing down: another replica holds the lease")) > 0, "no stand-down line yet"
	})

	// Mid-stream: CRs arrive, the active pod reconciles the first ones and dies; more arrive while
	// the lease still names the dead pod, so the standby stands down on their events.
	for _, u := range crs[:3] {
		createIn(t, ctx, h, r.namespace, u)
	}
	waitSyncedIn(t, ctx, h, r.namespace, crs[0].GetName(), 2*time.Minute)
	killed := time.Now()
	first.kill()
	for _, u := range crs[3:] {
		createIn(t, ctx, h, r.namespace, u)
	}
	for _, u := range crs {
		waitSyncedIn(t, ctx, h, r.namespace, u.GetName(), haLease+3*time.Minute)
	}

	l, err := h.kube.CoordinationV1().Leases(r.namespace).Get(ctx, leaseName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "ha-operator-1", *l.Spec.HolderIdentity)
	assert.GreaterOrEqual(t, *l.Spec.LeaseTransitions, int32(1))

	// Never both: the standby acted only after the kill (log times are whole seconds), the dead pod
	// acted before it.
	killSecond := killed.Truncate(time.Second)
	require.NotEmpty(t, first.acted(t), "the first pod acted")
	for _, at := range second.acted(t) {
		assert.False(t, at.Before(killSecond), "the standby acted at %s, before the active pod was killed at %s", at, killed)
	}
	took := second.lines(t, "Holding the lease from now on")
	require.NotEmpty(t, took, "the standby's takeover line")
	failover := took[0].Sub(killSecond)
	t.Logf("failover: the standby took the lease %s after the kill (lease %s)", failover, haLease)
	// The lease ends at most haLease after the kill (the dead holder's last renewal was before it);
	// the standby's next lease run (every 15 s, spaced at least 30 s) takes it, plus the start of
	// that hook process on a loaded machine.
	assert.LessOrEqual(t, failover, haLease+45*time.Second, "takeover within the lease time plus one lease run")

	// Nothing lost: every CR's runbook is in Ironic.
	for _, u := range crs {
		rb, err := h.cloud.runbook(ctx, osName(u))
		require.NoError(t, err)
		assert.NotNil(t, rb, "runbook %s", osName(u))
	}
}

func createIn(t *testing.T, ctx context.Context, h *harness, namespace string, u *unstructured.Unstructured) {
	t.Helper()
	c := u.DeepCopy()
	c.SetNamespace(namespace)
	c.SetResourceVersion("")
	_, err := h.dyn.Resource(runbooks.gvr).Namespace(namespace).Create(ctx, c, metav1.CreateOptions{})
	require.NoError(t, err, "create %s/%s", namespace, c.GetName())
}

// waitSyncedIn waits until the runbook CR reports Synced for its current generation; a closed
// exited channel (an operator that ended) fails the wait at once.
func waitSyncedIn(t *testing.T, ctx context.Context, h *harness, namespace, name string, timeout time.Duration, exited ...<-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		u, err := h.dyn.Resource(runbooks.gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		st := readStatus(u)
		if st.syncStatus == "Synced" && st.observed == u.GetGeneration() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s/%s to be Synced; status %v", timeout, namespace, name, u.Object["status"])
		}
		for _, c := range exited {
			select {
			case <-c:
				t.Fatalf("the operator exited while waiting for %s/%s to be Synced", namespace, name)
			default:
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
}
