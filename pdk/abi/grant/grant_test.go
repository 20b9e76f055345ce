package grant

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var declared = []Grant{
	{Service: "network", Methods: []string{"GET", "POST", "DELETE"}, Paths: []string{"v2.0/flavors", "v2.0/flavors/*"}},
	{Service: "network", Methods: []string{"*"}, Paths: []string{"v2.0/service_profiles/**"}},
}

func TestEffectiveGrant(t *testing.T) {
	op, err := os.ReadFile("testdata/operator-grants.json")
	require.NoError(t, err)
	operator, err := Parse(op)
	require.NoError(t, err)

	cases := []struct {
		name                  string
		set                   Set
		service, method, path string
		want                  bool
	}{
		{"declared, not narrowed", NewSet(declared, nil), "network", "POST", "v2.0/flavors", true},
		{"star segment", NewSet(declared, nil), "network", "DELETE", "/v2.0/flavors/abc", true},
		{"star is one segment", NewSet(declared, nil), "network", "DELETE", "v2.0/flavors/abc/x", false},
		{"double star", NewSet(declared, nil), "network", "PATCH", "v2.0/service_profiles/a/b", true},
		{"undeclared method", NewSet(declared, nil), "network", "PUT", "v2.0/flavors/abc", false},
		{"undeclared service", NewSet(declared, nil), "baremetal", "GET", "v2.0/flavors", false},
		{"dot-dot escape", NewSet(declared, nil), "network", "GET", "v2.0/service_profiles/../networks", false},
		{"empty segment", NewSet(declared, nil), "network", "GET", "v2.0//flavors", false},
		{"encoded dot-dot in a star", NewSet(declared, nil), "network", "GET", "v2.0/flavors/%2e%2e", false},
		{"upper-case encoded dot-dot", NewSet(declared, nil), "network", "GET", "v2.0/service_profiles/%2E%2E/%2e%2E/networks", false},
		{"half-encoded dot-dot", NewSet(declared, nil), "network", "GET", "v2.0/flavors/.%2e", false},
		{"encoded dot", NewSet(declared, nil), "network", "GET", "v2.0/flavors/%2e", false},
		{"encoded slash in a star", NewSet(declared, nil), "network", "DELETE", "v2.0/flavors/..%2f..%2fnetworks%2fx", false},
		{"encoded backslash", NewSet(declared, nil), "network", "DELETE", "v2.0/flavors/a%5cb", false},
		{"raw backslash", NewSet(declared, nil), "network", "DELETE", `v2.0/flavors/..\networks`, false},
		{"broken escape", NewSet(declared, nil), "network", "GET", "v2.0/flavors/%zz", false},
		{"query in a star", NewSet(declared, nil), "network", "GET", "v2.0/flavors/x?all_tenants=1", false},
		{"fragment in a star", NewSet(declared, nil), "network", "GET", "v2.0/flavors/x#y", false},
		{"other encoded characters are a segment", NewSet(declared, nil), "network", "GET", "v2.0/flavors/a%20b", true},
		{"a trailing slash is an empty segment", NewSet(declared, nil), "network", "GET", "v2.0/flavors/", false},
		{"path case is not folded", NewSet(declared, nil), "network", "GET", "V2.0/FLAVORS", false},
		{"service case is not folded", NewSet(declared, nil), "Network", "GET", "v2.0/flavors", false},
		{"method case is folded", NewSet(declared, nil), "network", "post", "v2.0/flavors", true},
		{"operator narrows methods", NewSet(declared, operator), "network", "POST", "v2.0/flavors", false},
		{"operator keeps reads", NewSet(declared, operator), "network", "GET", "v2.0/flavors/x", true},
		{"operator cannot widen", NewSet(nil, operator), "network", "GET", "v2.0/flavors", false},
		{"empty operator list allows nothing", NewSet(declared, []Grant{}), "network", "GET", "v2.0/flavors", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, c.set.Allows(c.service, c.method, c.path))
		})
	}
	assert.Equal(t, "POST network v2.0/flavors: method POST is not one the operator allows for this path (GET)",
		NewSet(declared, operator).Explain("network", "POST", "v2.0/flavors"))
	assert.Equal(t, "PUT network v2.0/x: no path pattern the plugin declares for service network matches (v2.0/flavors, v2.0/flavors/*, v2.0/service_profiles/**)",
		NewSet(declared, operator).Explain("network", "PUT", "v2.0/x"))
	assert.Empty(t, NewSet(declared, operator).Explain("network", "GET", "v2.0/flavors/x"))
}

// grantRule is the table of cases of pdk/testdata/grant-rule.json, which the host's
// openstack_request (host/internal/wasm) and pdktest also run: both must allow and refuse the same
// calls with the same words, or a plugin passes its unit tests and fails in production.
type grantRule struct {
	Grants []Grant `json:"grants"`
	Cases  []struct {
		Name    string `json:"name"`
		Service string `json:"service"`
		Method  string `json:"method"`
		Path    string `json:"path"`
		Kind    string `json:"kind"`
		Refusal string `json:"refusal"`
	} `json:"cases"`
}

// grantRulePath is the shared table, relative to this package's directory.
const grantRulePath = "../../testdata/grant-rule.json"

func TestGrantRule(t *testing.T) {
	raw, err := os.ReadFile(grantRulePath)
	require.NoError(t, err)
	var rule grantRule
	require.NoError(t, json.Unmarshal(raw, &rule))
	require.NotEmpty(t, rule.Cases)
	require.NoError(t, Validate(rule.Grants))
	set := NewSet(rule.Grants, nil)
	for _, c := range rule.Cases {
		t.Run(c.Name, func(t *testing.T) {
			assert.Equal(t, c.Refusal == "", set.Allows(c.Service, c.Method, c.Path))
			assert.Equal(t, c.Refusal, set.Explain(c.Service, c.Method, c.Path))
			assert.Equal(t, c.Refusal, Explain(rule.Grants, "the plugin declares", c.Service, c.Method, c.Path))
			assert.Equal(t, c.Kind == "invalid_request", CheckPath(c.Path) != nil, "CheckPath refuses exactly the unsafe paths")
		})
	}
}

func TestParseRefusesBadGrants(t *testing.T) {
	cases := map[string]string{
		"not json":        `{`,
		"null":            `null`,
		"object":          `{"service":"network"}`,
		"misspelt key":    `[{"service":"network","method":["GET"],"paths":["a"]}]`,
		"no service":      `[{"methods":["GET"],"paths":["a"]}]`,
		"no methods":      `[{"service":"network","methods":[],"paths":["a"]}]`,
		"unknown method":  `[{"service":"network","methods":["FETCH"],"paths":["a"]}]`,
		"no paths":        `[{"service":"network","methods":["GET"]}]`,
		"inner **":        `[{"service":"network","methods":["GET"],"paths":["a/**/b"]}]`,
		"dot-dot pattern": `[{"service":"network","methods":["GET"],"paths":["a/../b"]}]`,
		// A second array would otherwise be dropped unread.
		"two arrays":     `[{"service":"network","methods":["GET"],"paths":["a"]}] [{"service":"network","methods":["DELETE"],"paths":["a"]}]`,
		"trailing comma": `[{"service":"network","methods":["GET"],"paths":["a"]}],`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(in))
			assert.Error(t, err)
		})
	}
}

// The source grant cases (pdk/testdata/source-rule.json), which pdktest also runs.
func TestSourceRule(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/source-rule.json")
	require.NoError(t, err)
	var rule struct {
		Sources []struct {
			Name    string   `json:"name"`
			Methods []string `json:"methods"`
			Paths   []string `json:"paths"`
		} `json:"sources"`
		Cases []struct {
			Name, Source, Method, Path, Kind, Refusal string
		} `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(raw, &rule))
	var gs []Grant
	for _, s := range rule.Sources {
		gs = append(gs, Grant{Service: s.Name, Methods: s.Methods, Paths: s.Paths})
	}
	set := NewSourceSet(gs)
	for _, c := range rule.Cases {
		t.Run(c.Name, func(t *testing.T) {
			assert.Equal(t, c.Refusal, set.Explain(c.Source, c.Method, c.Path))
			assert.Equal(t, c.Refusal == "", set.Allows(c.Source, c.Method, c.Path))
			assert.Equal(t, c.Kind == "invalid_request", CheckSourcePath(c.Path) != nil)
		})
	}
}
