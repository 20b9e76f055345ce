package grant

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzMatch checks what a match promises whatever the path: every segment the server will see,
// once decoded, is one plain segment, and every literal segment of the pattern is matched as
// written. Run with: go test -fuzz FuzzMatch ./abi/grant/ in pdk/
func FuzzMatch(f *testing.F) {
	for _, seed := range [][2]string{
		{"v2.0/flavors/*", "v2.0/flavors/abc"},
		{"v2.0/flavors/*", "v2.0/flavors/%2e%2e"},
		{"v2.0/service_profiles/**", "v2.0/service_profiles/a/..%2fb"},
		{"v1/runbooks/*", "/v1/runbooks/x/"},
		{"**", "a//b"},
		{"*/x", "%2F/x"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		if !Match(pattern, path) {
			return
		}
		ps, xs := split(pattern), split(path)
		for _, x := range xs {
			dec, err := url.PathUnescape(x)
			if err != nil || dec == "" || dec == "." || dec == ".." || strings.ContainsAny(dec, `/\`) ||
				strings.ContainsAny(x, `\?#`) {
				t.Fatalf("Match(%q, %q): segment %q would not stay one plain segment", pattern, path, x)
			}
		}
		rest := len(ps) > 0 && ps[len(ps)-1] == "**"
		if !rest && len(ps) != len(xs) {
			t.Fatalf("Match(%q, %q): %d pattern segments matched %d path segments", pattern, path, len(ps), len(xs))
		}
		for i, p := range ps {
			if p == "*" || (p == "**" && i == len(ps)-1) {
				continue
			}
			if i >= len(xs) || xs[i] != p {
				t.Fatalf("Match(%q, %q): literal segment %q not matched as written", pattern, path, p)
			}
		}
	})
}
