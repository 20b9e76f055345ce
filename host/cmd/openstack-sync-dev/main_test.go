package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
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
