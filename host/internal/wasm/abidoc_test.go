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

// TestABIDocUserFunctions keeps docs/abi.md true about extism:host/user: each host function is
// documented with its exact type.
func TestABIDocUserFunctions(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/abi.md")
	require.NoError(t, err)
	types := func(s string) []api.ValueType {
		var out []api.ValueType
		for _, w := range regexp.MustCompile(`\bi(32|64)\b`).FindAllString(s, -1) {
			out = append(out, map[string]api.ValueType{"i32": api.ValueTypeI32, "i64": api.ValueTypeI64}[w])
		}
		return out
	}
	for name, s := range userSignatures {
		sig := regexp.MustCompile("(?m)`" + name + "`[^\n]*?`\\(([^)]*)\\) -> ([^`]*)`")
		found := false
		for _, m := range sig.FindAllStringSubmatch(string(doc), -1) {
			if sigString(types(m[1]), types(m[2])) == sigString(s.Params, s.Results) {
				found = true
			}
		}
		assert.True(t, found, "docs/abi.md does not give %s its type %s", name, sigString(s.Params, s.Results))
	}
}

// TestCHeaderMatchesTheHost keeps plugins-c/include/openstack_sync.h true: every kernel function
// the host provides is declared with the host's exact types, and so is openstack_request. (A C
// plugin imports only what it calls, so loading one would not check the rest.)
func TestCHeaderMatchesTheHost(t *testing.T) {
	header, err := os.ReadFile("../../../plugins-c/include/openstack_sync.h")
	require.NoError(t, err)
	decl := regexp.MustCompile(`(?m)^OS_(KERNEL|USER)\((\w+)\) (\w+) \w+\(([^)]*)\);`)
	cType := func(c string) []api.ValueType {
		c = strings.TrimPrefix(c, "const ")
		if strings.Contains(c, "*") {
			return []api.ValueType{api.ValueTypeI32} // a guest pointer in wasm32
		}
		switch strings.Fields(c)[0] {
		case "void":
			return nil
		case "uint64_t", "ExtismPointer":
			return []api.ValueType{api.ValueTypeI64}
		case "int32_t", "uint32_t", "uint8_t":
			return []api.ValueType{api.ValueTypeI32}
		}
		t.Fatalf("openstack_sync.h: unexpected C type %q", c)
		return nil
	}
	declared := map[string]bool{}
	for _, m := range decl.FindAllStringSubmatch(string(header), -1) {
		module, name := kernel.ModuleName, m[2]
		want, ok := kernel.Signatures()[name]
		if m[1] == "USER" {
			module = UserModule
			want, ok = userSignatures[name]
		}
		if !assert.True(t, ok, "openstack_sync.h declares %s.%s, which the host does not provide", module, name) {
			continue
		}
		declared[module+"."+name] = true
		var params []api.ValueType
		for _, p := range strings.Split(m[4], ",") {
			params = append(params, cType(strings.TrimSpace(p))...)
		}
		assert.Equal(t, sigString(want.Params, want.Results), sigString(params, cType(m[3])), "%s.%s", module, name)
	}
	for name := range kernel.Signatures() {
		assert.True(t, declared[kernel.ModuleName+"."+name], "openstack_sync.h misses %s", name)
	}
	for name := range userSignatures {
		assert.True(t, declared[UserModule+"."+name], "openstack_sync.h misses %s", name)
	}
}
