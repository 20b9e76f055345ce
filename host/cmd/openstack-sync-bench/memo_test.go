package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The bench runs each row's hooks with the memo bound the chart derives for that many CRs.
func TestTheMemoBoundIsTheChartsForTheRowsCRs(t *testing.T) {
	values := func(t *testing.T, text string) string {
		p := filepath.Join(t.TempDir(), "values.yaml")
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	derived := values(t, `
compilationCache: {memoMaxMiB: null, memoBytesPerCR: 1024, memoMinMiB: 4}
pluginData:
  ironicRunbooks: {memoBytesPerCR: 400}
  neutronSubnetPools: {memoBytesPerCR: null}
`)
	for _, c := range []struct {
		plugin string
		crs    int
		want   int
	}{
		{"ironic-runbooks", 20000, 10}, // 20,000 × 400 × 1.25 = 9.5 MiB
		{"ironic-runbooks", 1, 4},
		{"neutron-subnet-pools", 20000, 25}, // the chart-wide 1,024 bytes
		{"neutron-router-flavors", 20000, 25},
	} {
		got, err := chartMemoMiB(derived, c.plugin, c.crs)
		require.NoError(t, err)
		assert.Equal(t, c.want, got, "%s at %d CRs", c.plugin, c.crs)
	}
	fixed := values(t, "compilationCache: {memoMaxMiB: 6, memoBytesPerCR: 1024, memoMinMiB: 4}\n")
	got, err := chartMemoMiB(fixed, "ironic-runbooks", 20000)
	require.NoError(t, err)
	assert.Equal(t, 6, got, "an explicit bound wins")

	_, err = chartMemoMiB(filepath.Join("..", "..", "..", chartValues), "ironic-runbooks", 20000)
	assert.NoError(t, err, "the chart's own values")
	assert.Equal(t, "neutronRouterFlavors", valuesKey("neutron-router-flavors"))
}
