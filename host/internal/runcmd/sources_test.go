package runcmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/fakenautobot"
)

const poolToken = "0123456789abcdef0123456789abcdef01234567"

// The example pool and its token Secret, with the cloud the run's --cloud names.
func poolCRs(t *testing.T, w world, url string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "examples", "neutron-subnet-pool.yaml"))
	require.NoError(t, err)
	body := bytes.ReplaceAll(raw, []byte("https://nautobot.example.com"), []byte(url))
	body = bytes.ReplaceAll(body, []byte("cloudName: local-admin"), []byte("cloudName: "+fakecloud.AdminCloud))
	return w.file(t, "pool.yaml", string(body))
}

func seededNautobot(t *testing.T) (*fakenautobot.Server, fakenautobot.Seed) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "examples", "nautobot", "seed.yaml"))
	require.NoError(t, err)
	var seed fakenautobot.Seed
	require.NoError(t, yaml.UnmarshalStrict(raw, &seed))
	nb := fakenautobot.New()
	t.Cleanup(nb.Close)
	nb.Load(seed)
	return nb, seed
}

func poolPrefixes(c *fakecloud.Cloud) map[string][]string {
	out := map[string][]string{}
	for _, p := range c.SubnetPools() {
		out[p.Name] = p.Prefixes
	}
	return out
}

func runPlugin(t *testing.T, plugin string, args []string, nautobot EmbeddedNautobot) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := MainWithNautobot(context.Background(), append([]string{"--plugin", filepath.Join(pluginsDir, plugin)}, args...),
		&out, &errOut, nil, nautobot)
	t.Logf("exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

// --source allow-lists a source, and a Secret document among the files is the token the host
// sends: the pool converges with Nautobot's CIDRs and the token is in no output.
func TestSourceAndSecretFromFiles(t *testing.T) {
	w := newWorld(t)
	nb, seed := seededNautobot(t)
	nb.AddToken(fakenautobot.Token{Key: poolToken})
	crs := poolCRs(t, w, nb.URL())
	code, out, errOut := runPlugin(t, "neutron-subnet-pools.wasm", []string{"--clouds", w.clouds, "--cloud", fakecloud.AdminCloud,
		"--source", "nautobot=" + nb.URL(), "--set", "SITE=" + seed.Site, crs}, nil)
	require.Equal(t, 0, code)
	assert.Equal(t, map[string][]string{"PUBLIC-IP-POOL": {"10.4.88.0/24", "204.232.163.128/25"}}, poolPrefixes(w.cloud))
	for _, r := range nb.Requests() {
		assert.Equal(t, poolToken, r.Token, "the Secret's token authenticates every request")
	}
	assert.NotEmpty(t, nb.Requests())
	assert.NotContains(t, out+errOut, poolToken)
	assert.Contains(t, out, "NeutronSubnetPool openstack/public-ip-pool")

	// Without --source the URL is allow-listed nowhere: the CR fails naming the field.
	code, out, errOut = runPlugin(t, "neutron-subnet-pools.wasm", []string{"--clouds", w.clouds, "--cloud", fakecloud.AdminCloud,
		"--set", "SITE=" + seed.Site, crs}, nil)
	require.Equal(t, 1, code, "a failed CR fails the pass")
	assert.Contains(t, errOut, "the operator allow-lists no source for this plugin (NEUTRON_SUBNET_POOL_SOURCES)")
	assert.Contains(t, errOut, "error=\"spec.nautobot.url: ")
	assert.Contains(t, out, "Failed")
}

// --embedded-nautobot serves a seed file's IPAM to CRs pointed at it, with the token of their
// Secret; only the development binary has one.
func TestEmbeddedNautobot(t *testing.T) {
	w := newWorld(t)
	crs := poolCRs(t, w, "https://nautobot.example.com")
	var started *fakenautobot.Server
	embedded := func(seedFile string, specs []map[string]any, secrets map[string]map[string][]byte) (string, string, func(), error) {
		raw, err := os.ReadFile(seedFile)
		require.NoError(t, err)
		var seed fakenautobot.Seed
		require.NoError(t, yaml.UnmarshalStrict(raw, &seed))
		started = fakenautobot.New()
		started.Load(seed)
		for _, ref := range started.PointSpecs(specs) {
			started.AddToken(fakenautobot.Token{Key: string(secrets[ref.Secret][ref.Key])})
		}
		return started.URL(), seed.Site, started.Close, nil
	}
	code, out, errOut := runPlugin(t, "neutron-subnet-pools.wasm", []string{"--clouds", w.clouds, "--cloud", fakecloud.AdminCloud,
		"--embedded-nautobot", filepath.Join(repoRoot(), "examples", "nautobot", "seed.yaml"), crs}, embedded)
	require.Equal(t, 0, code)
	assert.Equal(t, map[string][]string{"PUBLIC-IP-POOL": {"10.4.88.0/24", "204.232.163.128/25"}}, poolPrefixes(w.cloud))
	require.NotNil(t, started)
	assert.NotEmpty(t, started.Requests())
	for _, r := range started.Requests() {
		assert.Equal(t, poolToken, r.Token)
		assert.Equal(t, []string{"iad3-dev"}, r.Query["location"], "the seed's site is the hook's SITE")
	}
	assert.NotContains(t, out+errOut, poolToken)
}

func TestSourceFlagsRefused(t *testing.T) {
	w := newWorld(t)
	crs := poolCRs(t, w, "https://nautobot.example.com")
	badSecret := w.file(t, "bad-secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: t}\ndata: {token: '%%%'}\n")
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--source", "nautobot", crs}, 2, `--source "nautobot" is not NAME=URL`},
		{[]string{"--source", "nautobot=ftp://nautobot.example.com", crs}, 1, "--source: "},
		{[]string{"--embedded-nautobot", "seed.yaml", crs}, 2, "--embedded-nautobot is only in openstack-sync-dev"},
		{[]string{crs, badSecret}, 1, "bad-secret.yaml document 1: Secret t: data.token is not base64"},
	}
	for _, c := range cases {
		code, _, errOut := runPlugin(t, "neutron-subnet-pools.wasm", append([]string{"--clouds", w.clouds, "--cloud", fakecloud.AdminCloud}, c.args...), nil)
		assert.Equal(t, c.code, code, c.args)
		assert.Contains(t, errOut, c.want, c.args)
	}
}
