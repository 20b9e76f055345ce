package kube_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/kube"
	"github.com/openstack-sync/openstack-sync/host/internal/kube/kubetest"
	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
)

// TestDryRunWritesSayDryRunWhereTheAPIServerReadsIt: a DELETE with a body takes its options from
// the body alone, so a dry-run delete must say so there. A dry run the API server misses is a
// real write (openstack-sync migrate; test/e2e's TestTakeover runs them against a real one).
func TestDryRunDeleteSaysSoInItsBody(t *testing.T) {
	s := kubetest.NewServer(t)
	var seen []kubetest.Request
	s.Intercept = func(r kubetest.Request) (int, string, bool) {
		seen = append(seen, r)
		return 200, `{"metadata":{"resourceVersion":"8"}}`, true
	}
	c, err := kube.NewForConfig(s.Config(), kube.Limit{})
	require.NoError(t, err)
	tgt := kubeapi.Target{Group: "g.example", Version: "v1", Plural: "widgets", Namespace: "ns", Name: "a"}
	ctx := context.Background()
	require.NoError(t, c.DeleteCR(ctx, tgt, "uid-a", "7", true))
	require.NoError(t, c.DeleteCR(ctx, tgt, "uid-a", "7", false))
	require.Len(t, seen, 2)
	var opts map[string]any
	require.NoError(t, json.Unmarshal([]byte(seen[0].Body), &opts))
	assert.Equal(t, []any{"All"}, opts["dryRun"])
	assert.Equal(t, map[string]any{"uid": "uid-a", "resourceVersion": "7"}, opts["preconditions"])
	var real map[string]any
	require.NoError(t, json.Unmarshal([]byte(seen[1].Body), &real))
	assert.NotContains(t, real, "dryRun")
}
