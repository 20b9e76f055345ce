package main

import (
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/openstack-sync/openstack-sync/host/internal/memo"
)

// chartValues is where the chart's values live under --repo.
const chartValues = "charts/openstack-sync-operator/values.yaml"

// chartMemoMiB is the convergence memo's bound the chart gives the hook of plugin in a release
// whose memory.crs is crs (charts/openstack-sync-operator/templates/_helpers.tpl): memoMaxMiB when
// set, else crs records of the plugin's memoBytesPerCR and a quarter more, at least memoMinMiB. A
// row then measures a site whose memo holds its CRs, as the chart sizes it, rather than a bound
// that would reconcile most of 20,000 CRs in full every run. The cache volume's cap is left out:
// the chart refuses a volume too small for the bound.
func chartMemoMiB(valuesFile, plugin string, crs int) (int, error) {
	b, err := os.ReadFile(valuesFile)
	if err != nil {
		return 0, err
	}
	var v struct {
		CompilationCache struct {
			MemoMaxMiB     *int `json:"memoMaxMiB"`
			MemoBytesPerCR int  `json:"memoBytesPerCR"`
			MemoMinMiB     int  `json:"memoMinMiB"`
		} `json:"compilationCache"`
		PluginData map[string]struct {
			MemoBytesPerCR *int `json:"memoBytesPerCR"`
		} `json:"pluginData"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		return 0, fmt.Errorf("%s: %w", valuesFile, err)
	}
	cc := v.CompilationCache
	if cc.MemoMaxMiB != nil {
		return *cc.MemoMaxMiB, nil
	}
	perCR := cc.MemoBytesPerCR
	if pd, ok := v.PluginData[valuesKey(plugin)]; ok && pd.MemoBytesPerCR != nil {
		perCR = *pd.MemoBytesPerCR
	}
	if perCR <= 0 || cc.MemoMinMiB <= 0 {
		return 0, fmt.Errorf("%s: compilationCache.memoBytesPerCR and .memoMinMiB must be set", valuesFile)
	}
	const mib = 1 << 20
	return max((crs*perCR*5/4+mib-1)/mib, cc.MemoMinMiB), nil
}

// valuesKey is a plugin's key in the chart's values: ironic-runbooks is ironicRunbooks.
func valuesKey(plugin string) string {
	parts := strings.Split(plugin, "-")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// memoEnv is the memo bound a scenario's hooks run with: OPENSTACK_SYNC_MEMO_MAX_MIB from the
// harness's environment when set (it passes through), else the chart's for the scenario's CRs.
func (s *scenario) memoEnv() []string {
	if _, set := os.LookupEnv(memo.MaxMiBEnv); set || s.memoMiB == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s=%d", memo.MaxMiBEnv, s.memoMiB)}
}
