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
		{args: nil, code: 2, stderr: "usage: openstack-sync <command>"},
		{args: []string{"frobnicate"}, code: 2, stderr: `openstack-sync: unknown command "frobnicate"`},
		{args: []string{"help"}, code: 0, stdout: "usage: openstack-sync <command>"},
		{args: []string{"version"}, code: 0, stdout: "openstack-sync "},
		{args: []string{"hook"}, code: 2, stderr: "--plugin is required"},
		{args: []string{"run", "cr.yaml"}, code: 2, stderr: "openstack-sync run: --plugin is required"},
		// The production binary links no in-process cloud.
		{args: []string{"run", "--plugin", "p.wasm", "--embedded-cloud", "cr.yaml"}, code: 2,
			stderr: "--embedded-cloud is only in openstack-sync-dev"},
		{args: []string{"plugin", "verify"}, code: 2, stderr: "want at least one FILE"},
		{args: []string{"migrate"}, code: 2, stderr: "openstack-sync migrate: --plugin, --from-crd and --to-crd are required"},
		{args: []string{"migrate", "--plugin", "p.wasm", "--from-crd", "ironicrunbooks", "--to-crd", "x.y/v1"}, code: 2,
			stderr: `--from-crd: "ironicrunbooks" is not <plural>.<group>/<version>`},
		{args: []string{"migrate", "--plugin", "p.wasm", "--from-crd", "a.b/v1", "--to-crd", "a.c/v1", "--from", "rackspace"}, code: 2,
			stderr: `--from must be openstack-sync or understack; got "rackspace"`},
		// The real wasm loader is wired: a missing module is named with the reason.
		{args: []string{"hook", "--plugin", "testdata/missing.wasm", "--config"}, code: 1,
			stderr: "loading plugin testdata/missing.wasm"},
		{args: []string{"hook", "--plugin", "testdata/missing.wasm", "--config"}, code: 1,
			stderr: "no such file or directory"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tt.args, &stdout, &stderr)
		assert.Equal(t, tt.code, code, tt.args)
		assert.Contains(t, stdout.String(), tt.stdout, tt.args)
		assert.Contains(t, stderr.String(), tt.stderr, tt.args)
	}
}
