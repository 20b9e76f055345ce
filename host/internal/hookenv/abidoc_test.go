package hookenv

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestABIDocListsEveryPrefixedVariable keeps docs/abi.md's warning true: every <PREFIX>_
// variable the framework reads is readable by the plugin, so the document must name each one
// for operators to know none of them may hold a secret. The names come from what Load and
// LoadRequestLimit actually look up, so a new variable cannot be added without the list.
func TestABIDocListsEveryPrefixedVariable(t *testing.T) {
	const prefix = "TESTPLUGIN"
	asked := map[string]bool{}
	lookup := func(name string) (string, bool) {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			asked[rest] = true
		}
		switch name {
		case prefix + "_CRD_API_VERSION":
			return "example.org/v1", true
		case prefix + "_CRD_KIND":
			return "Thing", true
		case prefix + "_CRD_RESOURCE":
			return "things.example.org", true
		}
		return "", false
	}
	_, err := Load(lookup, prefix, "things")
	require.NoError(t, err)
	_, err = LoadRequestLimit(lookup, prefix)
	require.NoError(t, err)
	require.Contains(t, asked, "_CRD_KIND", "the recording lookup saw nothing")

	doc, err := os.ReadFile("../../../docs/abi.md")
	require.NoError(t, err)
	_, list, ok := strings.Cut(string(doc), "That includes the framework's own:")
	require.True(t, ok, "docs/abi.md no longer lists the framework's own <PREFIX>_ variables")
	list, _, _ = strings.Cut(list, "Credentials belong")
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`(_[A-Z0-9_]+)`").FindAllStringSubmatch(list, -1) {
		documented[m[1]] = true
	}
	var missing []string
	for name := range asked {
		if !documented[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "docs/abi.md's list of the framework's <PREFIX>_ variables misses these")
}
