package pdk

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGrantAllows(t *testing.T) {
	g := Grant{Service: "network", Methods: []string{"GET", "put"},
		Paths: []string{"v2.0/network_segment_ranges", "v2.0/network_segment_ranges/*", "v2.0/tags/**"}}
	cases := []struct {
		name, service, method, path string
		want                        bool
	}{
		{"exact path", "network", "GET", "v2.0/network_segment_ranges", true},
		{"leading slash ignored", "network", "GET", "/v2.0/network_segment_ranges", true},
		{"one segment wildcard", "network", "PUT", "v2.0/network_segment_ranges/abc", true},
		{"method case-insensitive", "network", "put", "v2.0/network_segment_ranges/abc", true},
		{"wildcard is one segment", "network", "GET", "v2.0/network_segment_ranges/abc/def", false},
		{"wildcard needs a segment", "network", "GET", "v2.0/network_segment_ranges/", true},
		{"double star takes the rest", "network", "GET", "v2.0/tags/a/b/c", true},
		{"double star takes nothing", "network", "GET", "v2.0/tags", true},
		{"method not granted", "network", "DELETE", "v2.0/network_segment_ranges/abc", false},
		{"other service", "baremetal", "GET", "v2.0/network_segment_ranges", false},
		{"other path", "network", "GET", "v2.0/networks", false},
		{"dot-dot never matches", "network", "GET", "v2.0/tags/../networks", false},
		{"empty segment never matches", "network", "GET", "v2.0//network_segment_ranges", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, g.Allows(c.service, c.method, c.path))
		})
	}
	assert.True(t, Grant{Service: "network", Methods: []string{"*"}, Paths: []string{"**"}}.Allows("network", "PATCH", "a/b"))
}
