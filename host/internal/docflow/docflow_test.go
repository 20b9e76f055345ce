package docflow

import (
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

const docPath = "docs/writing-plugins.md"

// docVersion is the release the page's step 1 installs.
const docVersion = "v0.1.0"

// instead are the documented commands CI cannot run as written, each with what it runs in their
// place and why. An entry that matches no line of the page fails the test: the page changed and
// this table must follow.
var instead = map[string]struct{ run, why string }{
	"cp ~/Downloads/openstack-sync-release/* .": {
		`cp "$RELEASE"/* .`,
		"the release of the checkout under test (make release's tool, without the per-platform binaries: the page installs them with go install) stands in for the download"},
	"openstack-sync plugin push plugin.wasm registry.example/team/neutron-address-scopes:0.3.1": {
		`REF=$(openstack-sync plugin push plugin.wasm "$REGISTRY"/team/neutron-address-scopes:0.3.1) && echo "$REF"`,
		"the printed reference is kept for the commands that use it"},
	"kubectl apply -f crd.yaml": {
		`: kubectl apply -f crd.yaml`,
		"no cluster in the fast tier: test/e2e (TestOCIPluginThroughTheChart) installs a plugin from a registry with helm and shell-operator"},
	"sudo bash hack/os-harness.sh up /var/tmp/os-chroot": {
		`: hack/os-harness.sh up`,
		"no real OpenStack in the fast tier: make e2e runs the page's plugin on the harness (test/e2e, TestDocPluginsOnRealOpenStack)"},
	"openstack-sync run --plugin plugin.wasm --clouds /var/tmp/os-chroot/srv/clouds.yaml --cloud local-admin --state harness.json scopes.yaml": {
		`openstack-sync run --plugin plugin.wasm --clouds clouds.yaml --cloud mycloud --state harness.json scopes.yaml`,
		"the in-process cloud stands in for the harness in the fast tier"},
	"helm install oso charts/openstack-sync-operator -f my-values.yaml --skip-crds --set-file pluginData.addressScopes.hook.crdYAML=crd.yaml": {
		`"$HELM" template oso "$REPO"/charts/openstack-sync-operator -f my-values.yaml --set-file pluginData.addressScopes.hook.crdYAML=crd.yaml > rendered.yaml`,
		"no cluster in the fast tier: the chart renders the same values (helm install is test/e2e's)"},
}

// e2eBlock marks, in a block's first line, a block that test/e2e runs (it needs a cluster and a
// real cloud); this test leaves it out.
const e2eBlock = "(make e2e runs this block)"

// placeholders stand for what the reader has at that point of the page.
var placeholders = strings.NewReplacer(
	"registry.example", `$REGISTRY`,
	"<manifest digest>", `${REF#*@sha256:}`,
	"<module hex>", `$(sha256sum plugin.wasm | cut -d' ' -f1)`,
	"<hex>", `$(sha256sum plugin.wasm | cut -d' ' -f1)`,
)

// block is one fenced block of the page.
type block struct {
	lang  string
	lines []string // logical lines: continuations joined
	line  int      // where it starts in the page
}

func parse(doc string) []block {
	var out []block
	var cur *block
	pending := ""
	for i, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "```") {
			if cur == nil {
				cur = &block{lang: strings.TrimPrefix(l, "```"), line: i + 1}
			} else {
				out = append(out, *cur)
				cur = nil
			}
			continue
		}
		if cur == nil {
			continue
		}
		if strings.HasSuffix(l, "\\") && cur.lang == "sh" {
			pending += strings.TrimSuffix(l, "\\")
			continue
		}
		line := pending + l
		if cur.lang == "sh" {
			line = strings.Join(strings.Fields(line), " ")
		}
		cur.lines = append(cur.lines, line)
		pending = ""
	}
	return out
}

// script turns the page into one bash script: every sh block's commands in order, the
// placeholders filled in, the commands of instead replaced, and the YAML blocks that name their
// file (a first line "# <file>") written to it.
func script(t *testing.T, doc string) string {
	var b strings.Builder
	b.WriteString("set -euxo pipefail\n")
	used := map[string]bool{}
	for _, blk := range parse(doc) {
		switch {
		case blk.lang == "sh" && len(blk.lines) > 0 && strings.Contains(blk.lines[0], e2eBlock):
			// A block that needs a cluster and a real cloud: test/e2e runs it as written.
			fmt.Fprintf(&b, "# %s:%d: %s\n", docPath, blk.line, e2eBlock)
		case blk.lang == "sh":
			fmt.Fprintf(&b, "# %s:%d\n", docPath, blk.line)
			for _, l := range blk.lines {
				cmd := strings.TrimSpace(l)
				if i := strings.Index(cmd, " #"); i >= 0 {
					cmd = strings.TrimSpace(cmd[:i])
				}
				if cmd == "" || strings.HasPrefix(cmd, "#") {
					continue
				}
				if r, ok := instead[cmd]; ok {
					used[cmd] = true
					fmt.Fprintf(&b, "# instead of %q: %s\n%s\n", cmd, r.why, r.run)
					continue
				}
				b.WriteString(placeholders.Replace(cmd) + "\n")
				if cmd == "cd neutron-address-scopes" {
					// What the reader brings along: a cloud's clouds.yaml, CR files and operator grants.
					b.WriteString(`cp "$FIXTURES"/* .` + "\n")
				}
			}
		case blk.lang == "yaml" && len(blk.lines) > 0 && strings.HasPrefix(blk.lines[0], "# "):
			name := strings.TrimPrefix(blk.lines[0], "# ")
			fmt.Fprintf(&b, "# %s:%d\ncat > %s <<EOF\n", docPath, blk.line, name)
			for _, l := range blk.lines[1:] {
				b.WriteString(placeholders.Replace(l) + "\n")
			}
			b.WriteString("EOF\n")
		}
	}
	for cmd := range instead {
		if !used[cmd] {
			t.Errorf("%s no longer has the command %q: update the instead table", docPath, cmd)
		}
	}
	return b.String()
}

func TestParseJoinsContinuations(t *testing.T) {
	blocks := parse("text\n```sh\na \\\n  --b c   # note\nd\n```\n```yaml\n# f.yaml\nk: v\n```\n")
	require.Len(t, blocks, 2)
	assert.Equal(t, []string{"a --b c # note", "d"}, blocks[0].lines)
	assert.Equal(t, "yaml", blocks[1].lang)
}

// TestWritingPluginsCommands runs docs/writing-plugins.md from the scaffold to the chart values:
// every sh command of the page, in order, in one shell, with the binaries built from this
// checkout, an in-process cloud standing in for the reader's and a registry server on loopback
// for theirs.
func TestWritingPluginsCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and a plugin and runs the page's commands")
	}
	root, err := filepath.Abs(repoRoot())
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(root, docPath))
	require.NoError(t, err)
	sh := script(t, string(raw))

	work := t.TempDir()
	// The release the page starts from: its modules archive is the Go module proxy the page's go
	// install and go mod tidy fetch openstack-sync from.
	release := filepath.Join(work, "release")
	build := exec.Command("go", "run", "./hack/release", "--version", docVersion, "--out", release, "--platforms", "")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "make release: %s", out)
	// go install writes the binaries to GOBIN, which a reader has on PATH. The module cache is the
	// test's own, so the modules at docVersion never reach the machine's; third-party modules come
	// from the machine's cache as from a proxy (no network), and the checksum database is off
	// for the same reason (the page's GONOSUMDB covers only openstack-sync's modules).
	// -trimpath keeps the module cache's path out of the build cache's keys: without it every run
	// compiles the host and its dependencies again from its own temporary module cache (minutes on
	// two cores), with it they come from the build cache of an earlier run or of hack/release's
	// test, which installs the same way.
	bin := filepath.Join(work, "bin")
	gomodcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)

	cloud := fakecloud.New(fakecloud.Options{})
	t.Cleanup(cloud.Close)
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)

	fixtures := filepath.Join(work, "fixtures")
	require.NoError(t, os.MkdirAll(fixtures, 0o755))
	cr := func(name string) string {
		return fmt.Sprintf("apiVersion: example.org/v1alpha1\nkind: NeutronAddressScope\nmetadata: {name: %s}\n"+
			"spec: {resource: {name: %s, ip_version: 4}}\n", name, name)
	}
	for name, body := range map[string]string{
		"clouds.yaml": strings.Replace(cloud.CloudsYAML(), "  "+fakecloud.AdminCloud+":", "  mycloud:", 1),
		"scopes.yaml": cr("blue") + "---\n" + cr("green"),
		"old.yaml":    cr("old"),
		"operator-grants.json": `[{"service": "network", "methods": ["GET", "POST", "PUT", "DELETE"],
			"paths": ["v2.0/address-scopes", "v2.0/address-scopes/*"]}]`,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(fixtures, name), []byte(body), 0o644))
	}
	helm := os.Getenv("HELM")
	if helm == "" {
		if helm, err = exec.LookPath("helm"); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal("helm is not installed; CI must render the chart values of the page")
			}
			t.Skip("helm is not installed (hack/k8s-tools.sh builds it): the page's chart step cannot run")
		}
	}

	cmd := exec.Command("bash", "-c", sh)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "GOBIN="+bin,
		"REPO="+root, "RELEASE="+release, "FIXTURES="+fixtures, "REGISTRY="+strings.TrimPrefix(reg.URL, "http://"), "HELM="+helm,
		"GOWORK=off", "GOFLAGS=-mod=mod -modcacherw -trimpath", "GOMODCACHE="+filepath.Join(work, "gomodcache"),
		"GOPROXY=file://"+filepath.Join(strings.TrimSpace(string(gomodcache)), "cache", "download"), "GOSUMDB=off",
		"OPENSTACK_SYNC_CACHE_DIR="+filepath.Join(work, "cache"))
	out, err = cmd.CombinedOutput()
	t.Logf("script:\n%s\noutput:\n%s", sh, out)
	require.NoError(t, err)

	text := string(out)
	mod := filepath.Join(work, "my-plugins", "neutron-address-scopes")
	for _, want := range []string{
		"openstack-sync " + docVersion + "\n", // go install fetched the release's module
		"openstack-sync-modules-" + docVersion + ".tar.gz: OK",
		"ok  \texample.org/neutron-address-scopes", // make test: unit tests and the conformance kit
		"--- PASS: TestConformance/cleanup",        // the page's own suite file, run as the page says
		"name:         neutron-address-scopes",
		"plugin.wasm: ok (neutron-address-scopes, 0.1.0, sha256:",
		"mycloud network POST v2.0/address-scopes -> 201", // run against the reader's cloud
		"Write plan:",
		"NeutronAddressScope default/old (deleted)",
		"local-admin network PUT v2.0/address-scopes/", // the edit of the embedded cloud's scope, by id
		"openstack: deleted v2.0/address-scopes/",      // and its delete
		"openstack: nothing to delete",
		"pulled ",
	} {
		assert.Contains(t, text, want)
	}
	gomod, err := os.ReadFile(filepath.Join(mod, "go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(gomod), "github.com/openstack-sync/openstack-sync/pdk "+docVersion+"\n", "plugin new requires the release")
	assert.NotContains(t, string(gomod), "replace", "a released openstack-sync needs no checkout")
	_, err = os.Stat(filepath.Join(mod, "scopes.wasm"))
	assert.NoError(t, err, "plugin pull wrote scopes.wasm")
	rendered, err := os.ReadFile(filepath.Join(mod, "rendered.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(rendered), "plugin pull -o", "the chart pulls the module the page pushed")
	assert.Contains(t, string(rendered), "NEUTRON_ADDRESS_SCOPE_CRD_KIND", "the chart derived the CRD variables from crdYAML")
}
