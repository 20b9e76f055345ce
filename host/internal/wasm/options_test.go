package wasm

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSandboxLimitsFromTheEnvironment(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		opts Options
		want func(t *testing.T, o Options)
		err  string
	}{
		{name: "defaults", want: func(t *testing.T, o Options) {
			assert.Equal(t, uint32(DefaultMemoryLimitPages), o.MemoryLimitPages)
			assert.Equal(t, DefaultCallTimeout, o.CallTimeout)
			assert.Equal(t, DefaultPoolSize, o.PoolSize)
			assert.Equal(t, DefaultCompileTimeout, o.CompileTimeout)
			assert.False(t, o.TrustedNoInterrupt)
		}},
		{name: "compile timeout", env: []string{CompileTimeoutEnv + "=5m"}, want: func(t *testing.T, o Options) {
			assert.Equal(t, 5*time.Minute, o.CompileTimeout)
		}},
		{name: "compile timeout without unit", env: []string{CompileTimeoutEnv + "=300"}, err: CompileTimeoutEnv + " must be a positive duration"},
		{name: "variables", env: []string{EnvMemoryMiB + "=64", EnvCallTimeout + "=90s", EnvPoolSize + "=3",
			EnvTrustedNoInterrupt + "=true"}, want: func(t *testing.T, o Options) {
			assert.Equal(t, uint32(64*16), o.MemoryLimitPages)
			assert.Equal(t, 90*time.Second, o.CallTimeout)
			assert.Equal(t, 3, o.PoolSize)
			assert.True(t, o.TrustedNoInterrupt)
		}},
		{name: "options win", env: []string{EnvMemoryMiB + "=64", EnvCallTimeout + "=90s"},
			opts: Options{MemoryLimitPages: 100, CallTimeout: time.Second}, want: func(t *testing.T, o Options) {
				assert.Equal(t, uint32(100), o.MemoryLimitPages)
				assert.Equal(t, time.Second, o.CallTimeout)
			}},
		{name: "memory not a number", env: []string{EnvMemoryMiB + "=lots"}, err: EnvMemoryMiB + " must be an integer number of MiB"},
		{name: "memory too small", env: []string{EnvMemoryMiB + "=1"}, err: EnvMemoryMiB},
		{name: "timeout without unit", env: []string{EnvCallTimeout + "=30"}, err: EnvCallTimeout + " must be a positive duration"},
		{name: "negative timeout", env: []string{EnvCallTimeout + "=-1s"}, err: EnvCallTimeout},
		{name: "pool of zero", env: []string{EnvPoolSize + "=0"}, err: EnvPoolSize + " must be an integer between 1 and 64"},
		{name: "concurrency widens the pool", env: []string{EnvConcurrency + "=4", EnvPoolSize + "=2"},
			want: func(t *testing.T, o Options) {
				assert.Equal(t, 4, o.Concurrency)
				assert.Equal(t, 4, o.PoolSize, "one instance per concurrent reconcile")
			}},
		{name: "concurrency defaults to one", want: func(t *testing.T, o Options) { assert.Equal(t, 1, o.Concurrency) }},
		{name: "concurrency of zero", env: []string{EnvConcurrency + "=0"}, err: EnvConcurrency + " must be an integer between 1 and 16"},
		{name: "lenient bool", env: []string{EnvTrustedNoInterrupt + "=yes"}, err: EnvTrustedNoInterrupt + " must be true or false"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opts.LookupEnv = lookupIn(c.env)
			o, err := c.opts.fromEnv()
			if c.err != "" {
				assert.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			c.want(t, o)
		})
	}
}

func TestABadLimitVariableRefusesTheLoad(t *testing.T) {
	o, _ := testOptions(t, EnvCallTimeout+"=soon")
	_, err := Load(context.Background(), guest(t, "pdkmock"), o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid sandbox configuration: "+EnvCallTimeout+" must be a positive duration")
}

// docs/contract.md Decision 19: reconciling a group's CRs on several instances at once gives up
// create-at-most-once across CRs naming one resource, so it is the operator's choice: one by
// default, in the host and in the chart, and more only through OPENSTACK_SYNC_WASM_CONCURRENCY.
func TestConcurrencyIsOneUnlessTheOperatorRaisesIt(t *testing.T) {
	assert.Equal(t, 1, DefaultConcurrency)
	o, err := Options{LookupEnv: lookupIn(nil)}.fromEnv()
	require.NoError(t, err)
	assert.Equal(t, 1, o.Concurrency)
	o, err = Options{LookupEnv: lookupIn([]string{EnvConcurrency + "=3"})}.fromEnv()
	require.NoError(t, err)
	assert.Equal(t, 3, o.Concurrency)
	for _, f := range []string{"values.yaml", "templates/_helpers.tpl", "templates/deployment.yaml"} {
		b, err := os.ReadFile("../../../charts/openstack-sync-operator/" + f)
		require.NoError(t, err)
		assert.NotContains(t, string(b), EnvConcurrency, "the chart leaves the concurrency to the operator's env")
	}
}
