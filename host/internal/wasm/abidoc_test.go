package wasm

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero/api"

	"github.com/openstack-sync/openstack-sync/host/internal/wasm/kernel"
)

// TestABIDocKernelTable keeps docs/abi.md's kernel function table true: every function the
// host provides is there with its exact type, and nothing else is.
func TestABIDocKernelTable(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/abi.md")
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(doc), "### Kernel functions")
	require.True(t, ok, "docs/abi.md has no kernel functions table")
	table, _, _ = strings.Cut(table, "\n\n`openstack_request`")
	row := regexp.MustCompile("(?m)^\\| (`[a-z_0-9]+`(?:, `[a-z_0-9]+`)*) \\| `\\(([^)]*)\\) -> ([^`]*)` \\|")
	types := func(s string) []api.ValueType {
		var out []api.ValueType
		for _, w := range regexp.MustCompile(`\bi(32|64)\b`).FindAllString(s, -1) {
			out = append(out, map[string]api.ValueType{"i32": api.ValueTypeI32, "i64": api.ValueTypeI64}[w])
		}
		return out
	}
	documented := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		for _, name := range strings.Split(m[1], ", ") {
			name = strings.Trim(name, "`")
			documented[name] = true
			s, ok := kernel.Signatures()[name]
			if !assert.True(t, ok, "docs/abi.md lists %s, which the host does not provide", name) {
				continue
			}
			assert.Equal(t, sigString(s.Params, s.Results), sigString(types(m[2]), types(m[3])), name)
		}
	}
	for name := range kernel.Signatures() {
		assert.True(t, documented[name], "docs/abi.md's kernel table misses %s", name)
	}
}
