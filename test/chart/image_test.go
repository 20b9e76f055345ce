package chart_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestImageScriptMatchesChart keeps hack/build-image.sh, which builds the operator image, in step
// with what the chart expects of the image: the host binary where the hook wrappers exec it and
// every plugin the values name, built from a plugins-wasm directory into the folder the values
// point at, with its digest in SHA256SUMS. make e2e builds the image itself and runs it
// (test/e2e TestImage).
func TestImageScriptMatchesChart(t *testing.T) {
	body, err := os.ReadFile("../../hack/build-image.sh")
	require.NoError(t, err)
	script := string(body)

	var values struct {
		HostBinary string `json:"hostBinary"`
		PluginData map[string]struct {
			Plugin struct {
				File string `json:"file"`
			} `json:"plugin"`
		} `json:"pluginData"`
	}
	raw, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, &values))

	host := regexp.MustCompile(`-o "\$root(/\S+)" ./host/cmd/openstack-sync`).FindStringSubmatch(script)
	require.NotNil(t, host, "build-image.sh builds ./host/cmd/openstack-sync into the root")
	assert.Equal(t, values.HostBinary, host[1], "hostBinary is where the image puts the host")
	plugins := regexp.MustCompile(`cp "\$plugins"/\*\.wasm "\$root(/\S+)/"`).FindStringSubmatch(script)
	require.NotNil(t, plugins, "build-image.sh copies the plugins into the root")
	assert.Contains(t, script, `sha256sum -- *.wasm > SHA256SUMS`, "the image lists its plugins' digests for pinning")
	for name, pd := range values.PluginData {
		dir, file := filepath.Split(pd.Plugin.File)
		assert.Equal(t, plugins[1]+"/", dir, "pluginData.%s.plugin.file is in the image's plugin folder", name)
		src := filepath.Join("../../plugins-wasm", strings.TrimSuffix(file, ".wasm"), "main.go")
		_, err := os.Stat(src)
		assert.NoError(t, err, "pluginData.%s.plugin.file %s: build-plugins.sh builds it from %s", name, file, src)
	}
}
