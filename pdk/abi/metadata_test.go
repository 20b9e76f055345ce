package abi

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The name rules are written without regexp (they are linked into every plugin); each must accept
// exactly what the pattern docs/abi.md states accepts.
func TestNameRulesAreTheirPatterns(t *testing.T) {
	rules := []struct {
		pattern string
		ok      func(string) bool
	}{
		{`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`, func(s string) bool { return CheckName(s) == nil }},
		{`^[A-Z][A-Z0-9_]{0,62}$`, func(s string) bool { return CheckEnvPrefix(s) == nil }},
		{`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`, func(s string) bool { return CheckBindingName(s) == nil }},
		{`^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`, func(s string) bool { return CheckSourceName(s) == nil }},
		{`^[A-Za-z]([A-Za-z0-9_,:]{0,126}[A-Za-z0-9_])?$`, ValidReason},
	}
	samples := []string{"", "a", "A", "0", "-", "_", ".", ":", "a-", "-a", "ab", "a-b", "a_b", "a.b", "a:b", "a,b", "a,",
		"A_B", "AB_", "A9", "9A", "neutron-router-flavors", "NEUTRON_ROUTER_FLAVORS", "Synced", "Error:Quota,x",
		"a b", "a\nb", "é", "aé", strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("A", 63), strings.Repeat("A", 64),
		strings.Repeat("a", 128), strings.Repeat("a", 129), "a" + strings.Repeat("-", 61) + "a", "a" + strings.Repeat("-", 62) + "a"}
	for _, r := range rules {
		re := regexp.MustCompile(r.pattern)
		for _, s := range samples {
			assert.Equal(t, re.MatchString(s), r.ok(s), "%s on %q", r.pattern, s)
		}
	}
}

func FuzzNameRulesAreTheirPatterns(f *testing.F) {
	for _, s := range []string{"a", "a-b", "A_B", "Synced", "a:b,c"} {
		f.Add(s)
	}
	name := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	prefix := regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,62}$`)
	binding := regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	source := regexp.MustCompile(`^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`)
	reason := regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]{0,126}[A-Za-z0-9_])?$`)
	f.Fuzz(func(t *testing.T, s string) {
		require.Equal(t, name.MatchString(s), CheckName(s) == nil, "name %q", s)
		require.Equal(t, prefix.MatchString(s), CheckEnvPrefix(s) == nil, "env prefix %q", s)
		require.Equal(t, binding.MatchString(s), CheckBindingName(s) == nil, "binding %q", s)
		require.Equal(t, source.MatchString(s), CheckSourceName(s) == nil, "source %q", s)
		require.Equal(t, reason.MatchString(s), ValidReason(s), "reason %q", s)
	})
}

func TestStatusKeys(t *testing.T) {
	for name, c := range map[string]struct {
		keys       []string
		skip, life bool
		want       string
	}{
		"with skip_status":     {[]string{"id"}, true, false, "but so is skip_status"},
		"lifecycle without id": {[]string{"resource"}, false, true, `must include "id"`},
		"twice":                {[]string{"id", "id"}, false, false, `"id" is listed twice`},
		"empty":                {[]string{""}, false, false, "not 1 to 63 printable"},
		"a newline":            {[]string{"a\nb"}, false, false, "not 1 to 63 printable"},
		"too many":             {strings.Split("a b c d e f g h i j k l m n o p q", " "), false, false, "at most 16"},
	} {
		err := CheckStatusKeys(c.keys, c.skip, c.life)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), c.want, name)
	}
	assert.NoError(t, CheckStatusKeys([]string{"id", "absent"}, false, true))
	assert.NoError(t, CheckStatusKeys(nil, true, true))
}

func TestPruneKeys(t *testing.T) {
	for name, c := range map[string]struct {
		keys     []string
		hasPrune bool
		want     string
	}{
		"without a prune": {[]string{"name"}, false, "has_prune is not"},
		"twice":           {[]string{"name", "name"}, true, `prune_keys: key "name" is listed twice`},
		"a space":         {[]string{"a b"}, true, "not 1 to 63 printable"},
		"too long":        {[]string{strings.Repeat("k", MaxLabel+1)}, true, "not 1 to 63 printable"},
		"too many":        {strings.Split("a b c d e f g h i j k l m n o p q", " "), true, "prune_keys lists 17 keys; at most 16"},
	} {
		err := CheckPruneKeys(c.keys, c.hasPrune)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), c.want, name)
	}
	assert.NoError(t, CheckPruneKeys([]string{"name", "owner"}, true))
	assert.NoError(t, CheckPruneKeys(nil, false))
}

func TestDescriptions(t *testing.T) {
	assert.NoError(t, CheckDescriptions("router flavor", "v1.2.3", "Keeps flavors.", "https://example.com/x"))
	for _, c := range [][4]string{
		{"a\nb", "", "", ""}, {strings.Repeat("n", MaxNounBytes+1), "", "", ""}, {"", "v 1", "", ""},
		{"", "", "a\x00", ""}, {"", "", "", "a b"}, {"", "", strings.Repeat("d", MaxDescriptionBytes+1), ""},
	} {
		assert.Error(t, CheckDescriptions(c[0], c[1], c[2], c[3]), "%q", c)
	}
}
