package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCommands(t *testing.T) {
	tests := []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{args: nil, code: 2, stderr: "usage: openstack-sync-dev <command>"},
		{args: []string{"hook"}, code: 2, stderr: `openstack-sync-dev: unknown command "hook"`},
		{args: []string{"help"}, code: 0, stdout: "demo [--plugins DIR]"},
		{args: []string{"demo", "--host", "testdata/no-such-host"}, code: 1, stderr: "host binary (build it with make build, or pass --host)"},
		{args: []string{"help"}, code: 0, stdout: "run --plugin <file> --embedded-cloud"},
		// The embedded cloud is started (and its collections checked) before the plugin is read.
		{args: []string{"run", "--plugin", "p.wasm", "--embedded-cloud", "--collection", "compute:v2.1/servers:server", "x.yaml"},
			code: 1, stderr: `--embedded-cloud: --collection: collection "compute:v2.1/servers:server": only the network service`},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tt.args, &stdout, &stderr)
		assert.Equal(t, tt.code, code, tt.args)
		assert.Contains(t, stdout.String(), tt.stdout, tt.args)
		assert.Contains(t, stderr.String(), tt.stderr, tt.args)
	}
}

// run --embedded-nautobot: the seed's IPAM, the specs pointed at it, their Secrets' tokens
// accepted; a seed that is not one is refused naming the file.
func TestEmbeddedNautobot(t *testing.T) {
	spec := map[string]any{"nautobot": map[string]any{"url": "https://nautobot.example.com",
		"tokenSecretRef": map[string]any{"secretName": "nb", "key": "token"}}}
	secrets := map[string]map[string][]byte{"nb": {"token": []byte("0123456789abcdef\n")}}
	url, site, stop, err := embeddedNautobot("../../../examples/nautobot/seed.yaml", []map[string]any{spec, {"name": "other"}}, secrets)
	require.NoError(t, err)
	defer stop()
	assert.Equal(t, "iad3-dev", site)
	assert.Equal(t, url, spec["nautobot"].(map[string]any)["url"])
	req, err := http.NewRequest(http.MethodGet, url+"/api/ipam/prefixes/?id=2bc3ecab-b6dc-46cd-9bd4-1c0ea8a07f87", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Token 0123456789abcdef")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "204.232.163.128/25")

	bad := filepath.Join(t.TempDir(), "seed.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("prefix: [x]\n"), 0o600))
	_, _, _, err = embeddedNautobot(bad, nil, nil)
	assert.ErrorContains(t, err, bad+": error unmarshaling JSON")
}

// `openstack-sync-dev nautobot` serves a seed until interrupted, accepting only the file's token;
// its URL is the first line it prints.
func TestServeNautobot(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("fedcba9876543210\n"), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	done := make(chan int)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"nautobot", "--seed", "../../../examples/nautobot/seed.yaml", "--token-file", tokenFile}, w, &stderr)
	}()
	line, err := bufio.NewReader(r).ReadString('\n')
	require.NoError(t, err)
	url := strings.TrimSpace(line)
	get := func(token string) int {
		req, err := http.NewRequest(http.MethodGet, url+"/api/ipam/prefixes/?id=53c8ee3b-09b9-41ab-a413-b1a1f5ecec6a", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Token "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, get("fedcba9876543210"))
	assert.Equal(t, http.StatusForbidden, get("another"))
	cancel()
	assert.Equal(t, 0, <-done)
	assert.Empty(t, stderr.String())

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"nautobot", "--seed", "s.yaml"}, 2, "--seed and --token-file are required"},
		{[]string{"nautobot", "--seed", "no-such.yaml", "--token-file", tokenFile}, 1, "--seed: open no-such.yaml"},
		{[]string{"nautobot", "--seed", "../../../examples/nautobot/seed.yaml", "--token-file", "no-such"}, 1, "--token-file: open no-such"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, c.code, run(context.Background(), c.args, &out, &errOut), c.args)
		assert.Contains(t, errOut.String(), c.want, c.args)
	}
}
