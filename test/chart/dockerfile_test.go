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

// TestDockerfileMatchesChart: no container engine builds the image here, so this keeps the
// Dockerfile consistent with what the chart and the e2e tier expect of the image: the shell-operator
// release the e2e tier runs, the host binary where the wrappers exec it, and every plugin the values
// name built from a plugins-wasm directory into the folder the values point at.
func TestDockerfileMatchesChart(t *testing.T) {
	body, err := os.ReadFile("../../Dockerfile")
	require.NoError(t, err)
	dockerfile := string(body)

	tools, err := os.ReadFile("../../hack/k8s-tools.sh")
	require.NoError(t, err)
	soVersion := regexp.MustCompile(`(?m)^SHELL_OPERATOR_VERSION=(\S+)$`).FindStringSubmatch(string(tools))
	require.NotNil(t, soVersion, "SHELL_OPERATOR_VERSION in hack/k8s-tools.sh")
	assert.Regexp(t, `(?m)^FROM ghcr\.io/flant/shell-operator:`+regexp.QuoteMeta(soVersion[1])+`$`, dockerfile,
		"the image must run the shell-operator release the e2e tier tests")

	gomod, err := os.ReadFile("../../go.mod")
	require.NoError(t, err)
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(string(gomod))
	require.NotNil(t, goVersion)
	assert.Regexp(t, `(?m)^FROM golang:`+regexp.QuoteMeta(goVersion[1])+`[.\-]\S* AS build$`, dockerfile, "the build stage's Go matches go.mod")

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

	copyDest := func(src string) string {
		m := regexp.MustCompile(`(?m)^COPY --from=build ` + regexp.QuoteMeta(src) + ` (\S+)$`).FindStringSubmatch(dockerfile)
		require.NotNil(t, m, "COPY --from=build %s", src)
		return m[1]
	}
	assert.Equal(t, values.HostBinary, copyDest("/out/openstack-sync"), "hostBinary is where the image puts the host")
	pluginsDir := strings.TrimSuffix(copyDest("/out/plugins/"), "/")
	assert.Contains(t, dockerfile, "hack/build-plugins.sh /out/plugins", "the image builds the plugins with the repository's script")
	assert.Contains(t, dockerfile, "sha256sum *.wasm > SHA256SUMS", "the image lists its plugins' digests for pinning")
	for name, pd := range values.PluginData {
		dir, file := filepath.Split(pd.Plugin.File)
		assert.Equal(t, pluginsDir+"/", dir, "pluginData.%s.plugin.file is in the image's plugin folder", name)
		src := filepath.Join("../../plugins-wasm", strings.TrimSuffix(file, ".wasm"), "main.go")
		_, err := os.Stat(src)
		assert.NoError(t, err, "pluginData.%s.plugin.file %s: build-plugins.sh builds it from %s", name, file, src)
	}
}
