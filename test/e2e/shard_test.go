//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestShards installs the chart twice in one namespace, each release the shard of the runbooks
// labelled shard=a or shard=b, against one cloud with PRUNE on. Each shard reconciles, finalizes
// and logs only its own CRs; deleting a CR of shard a prunes its runbook while shard b's runbook,
// which the same ownership marker makes look like shard a's, stays.
func TestShards(t *testing.T) {
	h := need(t)
	ctx := context.Background()
	h.stopOperator()
	const ns = "openstack-sync-e2e-shards"
	a := h.installRelease(t, ctx, "shard-a", ns, "shard: {labelSelector: {matchLabels: {shard: a}}}\n")
	b := h.installRelease(t, ctx, "shard-b", ns, "shard: {labelSelector: {matchLabels: {shard: b}}}\n")

	cr := func(name, shard string) *unstructured.Unstructured {
		u := renamed(h.examples.crs[runbooks.kind], "-"+name, "spec", "runbookName", "_SHARD_"+strings.ToUpper(name))
		u.SetLabels(map[string]string{"shard": shard})
		return u
	}
	crs := map[string]*unstructured.Unstructured{"a1": cr("a1", "a"), "a2": cr("a2", "a"), "b1": cr("b1", "b")}
	clean := func() {
		for _, u := range crs {
			assert.NoError(t, h.cloud.deleteRunbook(ctx, osName(u)))
		}
	}
	clean()
	t.Cleanup(func() {
		a.killAll()
		b.killAll()
		for _, u := range crs {
			if got, err := h.dyn.Resource(runbooks.gvr).Namespace(ns).Get(ctx, u.GetName(), metav1.GetOptions{}); err == nil {
				got.SetFinalizers(nil)
				_, _ = h.dyn.Resource(runbooks.gvr).Namespace(ns).Update(ctx, got, metav1.UpdateOptions{})
			}
		}
		clean()
	})
	for _, u := range crs {
		createIn(t, ctx, h, ns, u)
	}
	podA, podB := a.start(t, ctx, "shard-a-0"), b.start(t, ctx, "shard-b-0")
	for name := range crs {
		waitSyncedIn(t, ctx, h, ns, crs[name].GetName(), 3*time.Minute)
	}

	// Shard a deletes a2: its prune runs with a1 desired, and must spare b1's claim.
	require.NoError(t, h.dyn.Resource(runbooks.gvr).Namespace(ns).Delete(ctx, crs["a2"].GetName(), metav1.DeleteOptions{}))
	deadline := time.Now().Add(3 * time.Minute)
	for {
		_, err := h.dyn.Resource(runbooks.gvr).Namespace(ns).Get(ctx, crs["a2"].GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		require.NoError(t, err)
		require.True(t, time.Now().Before(deadline), "CR a2 still there 3 minutes after its delete (finalizer held?)")
		time.Sleep(500 * time.Millisecond)
	}
	rb, err := h.cloud.runbook(ctx, osName(crs["a2"]))
	require.NoError(t, err)
	assert.Nil(t, rb, "shard a pruned its deleted CR's runbook")
	for _, name := range []string{"a1", "b1"} {
		rb, err := h.cloud.runbook(ctx, osName(crs[name]))
		require.NoError(t, err)
		assert.NotNil(t, rb, "runbook %s of %s survives shard a's prune", osName(crs[name]), name)
	}
	assert.NotEmpty(t, podA.lines(t, "Found "), "shard a ran")

	// Each shard named, finalized and reconciled only its own CRs.
	for pod, own := range map[*pod]string{podA: "-a", podB: "-b"} {
		for _, l := range pod.hookLines(t) {
			ref, _ := l.raw["cr"].(string)
			if ref == "" {
				continue
			}
			assert.True(t, strings.Contains(ref, own), "%s logged about %s: %s", pod.name, ref, l.Msg)
		}
	}
	for name, u := range crs {
		if name == "a2" {
			continue
		}
		got, err := h.dyn.Resource(runbooks.gvr).Namespace(ns).Get(ctx, u.GetName(), metav1.GetOptions{})
		require.NoError(t, err)
		assert.Contains(t, got.GetFinalizers(), finalizer, "%s holds its shard's finalizer", name)
		assert.Equal(t, "Synced", readStatus(got).syncStatus, fmt.Sprintf("%s is still Synced", name))
	}
}
