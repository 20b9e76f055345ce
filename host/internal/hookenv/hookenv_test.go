package hookenv

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/profile"
)

func env(kv map[string]string) LookupFunc {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

// base is a complete enabled environment; cases override or delete single variables.
func base() map[string]string {
	return map[string]string{
		"P_ENABLED":         "true",
		"P_CRD_API_VERSION": "neutron.openstack-sync.io/v1alpha1",
		"P_CRD_KIND":        "NeutronRouterFlavor",
		"P_CRD_RESOURCE":    "neutronrouterflavors.neutron.openstack-sync.io",
	}
}

func TestLoad(t *testing.T) {
	const unset = "\x00unset"
	tests := []struct {
		name string
		set  map[string]string
		want func(*Config)
		err  string
	}{
		{name: "defaults", want: func(c *Config) {}},
		{name: "every value", set: map[string]string{
			"P_STATUS_ENABLED": "true", "P_PRUNE": "true", "P_SYNC_CRONTAB": "  0 * * * *\n",
			"P_READY_RETRIES": " 5 ", "P_READY_DELAY": "0.25", "POD_NAMESPACE": "openstack",
		}, want: func(c *Config) {
			c.StatusEnabled, c.Prune, c.SyncCrontab = true, true, "0 * * * *"
			c.ReadyRetries, c.ReadyDelay, c.PodNamespace = 5, 250*time.Millisecond, "openstack"
		}},
		{name: "progress crontab", set: map[string]string{"P_PROGRESS_CRONTAB": " */10 * * * * * "},
			want: func(c *Config) { c.ProgressCrontab = "*/10 * * * * *" }},
		{name: "empty progress crontab turns progress runs off", set: map[string]string{"P_PROGRESS_CRONTAB": ""},
			want: func(c *Config) { c.ProgressCrontab = "" }},
		{name: "zero retries skip the probe", set: map[string]string{"P_READY_RETRIES": "0"},
			want: func(c *Config) { c.ReadyRetries = 0 }},
		{name: "exponent delay", set: map[string]string{"P_READY_DELAY": "1e1"}, want: func(c *Config) {}},
		{name: "readiness budget", set: map[string]string{"P_READY_BUDGET": "120"}, want: func(c *Config) { c.ReadyBudget = 2 * time.Minute }},
		{name: "run budget", set: map[string]string{"P_RUN_BUDGET": "90"}, want: func(c *Config) { c.RunBudget = 90 * time.Second }},
		{name: "understack profile", set: map[string]string{"P_PROFILE": "understack"},
			want: func(c *Config) { c.Profile = profile.Understack }},
		{name: "profile named as the default", set: map[string]string{"P_PROFILE": "openstack-sync"}, want: func(c *Config) {}},
		{name: "unknown profile", set: map[string]string{"P_PROFILE": "rackspace"},
			err: `P_PROFILE must be openstack-sync or understack; got "rackspace"`},
		{name: "the other profile's CRD", set: map[string]string{"P_OTHER_CRD_API_VERSION": "neutron.understack.rackspace.net/v1alpha1",
			"P_OTHER_CRD_RESOURCE": "neutronrouterflavors.neutron.understack.rackspace.net"}, want: func(c *Config) {
			c.OtherAPIVersion, c.OtherResource = "neutron.understack.rackspace.net/v1alpha1", "neutronrouterflavors.neutron.understack.rackspace.net"
		}},
		{name: "the other profile's CRD half named", set: map[string]string{"P_OTHER_CRD_API_VERSION": "neutron.understack.rackspace.net/v1alpha1"},
			err: "P_OTHER_CRD_API_VERSION and P_OTHER_CRD_RESOURCE must be set together"},
		{name: "run budget off", set: map[string]string{"P_RUN_BUDGET": "0"}, want: func(c *Config) { c.RunBudget = 0 }},
		{name: "bad run budget", set: map[string]string{"P_RUN_BUDGET": "soon"}, err: "P_RUN_BUDGET must be a number"},
		{name: "negative readiness budget", set: map[string]string{"P_READY_BUDGET": "-1"}, err: "P_READY_BUDGET must be a number of seconds"},
		{name: "bool 1", set: map[string]string{"P_PRUNE": "1"}, err: "P_PRUNE must be true or false"},
		{name: "bool True", set: map[string]string{"P_STATUS_ENABLED": "True"}, err: "P_STATUS_ENABLED must be true or false"},
		{name: "bool spaces", set: map[string]string{"P_PRUNE": " true "}, err: "P_PRUNE must be true or false"},
		{name: "bool empty", set: map[string]string{"P_PRUNE": ""}, err: "P_PRUNE must be true or false"},
		{name: "enabled yes", set: map[string]string{"P_ENABLED": "yes"}, err: "P_ENABLED must be true or false"},
		{name: "retries word", set: map[string]string{"P_READY_RETRIES": "not-a-number"}, err: "P_READY_RETRIES must be an integer"},
		{name: "retries float", set: map[string]string{"P_READY_RETRIES": "1.5"}, err: "P_READY_RETRIES must be an integer"},
		{name: "retries negative", set: map[string]string{"P_READY_RETRIES": "-1"}, err: "P_READY_RETRIES must not be negative"},
		// The original's int() also took "1_0" and "+3"; Go's base-10 ParseInt takes the sign and
		// refuses the separator, and the contract keeps exactly that.
		{name: "retries leading plus", set: map[string]string{"P_READY_RETRIES": "+3"}, want: func(c *Config) { c.ReadyRetries = 3 }},
		{name: "retries underscore", set: map[string]string{"P_READY_RETRIES": "1_0"}, err: "P_READY_RETRIES must be an integer"},
		{name: "delay word", set: map[string]string{"P_READY_DELAY": "ten"}, err: "P_READY_DELAY must be a number"},
		{name: "delay nan", set: map[string]string{"P_READY_DELAY": "nan"}, err: "P_READY_DELAY must be a number of seconds"},
		{name: "delay inf", set: map[string]string{"P_READY_DELAY": "inf"}, err: "P_READY_DELAY must be a number of seconds"},
		{name: "delay negative", set: map[string]string{"P_READY_DELAY": "-1"}, err: "P_READY_DELAY must be a number of seconds"},
		{name: "api version missing", set: map[string]string{"P_CRD_API_VERSION": unset},
			err: "P_CRD_API_VERSION is required but not set; ensure the Helm chart has injected it before the hook runs"},
		{name: "kind empty", set: map[string]string{"P_CRD_KIND": ""}, err: "P_CRD_KIND is required but not set"},
		{name: "resource missing", set: map[string]string{"P_CRD_RESOURCE": unset}, err: "P_CRD_RESOURCE is required but not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := base()
			for k, v := range tt.set {
				if v == unset {
					delete(e, k)
				} else {
					e[k] = v
				}
			}
			got, err := Load(env(e), "P", "b")
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				var cerr *Error
				assert.ErrorAs(t, err, &cerr)
				return
			}
			require.NoError(t, err)
			want := Config{Prefix: "P", BindingName: "b", Enabled: true,
				APIVersion: "neutron.openstack-sync.io/v1alpha1", Kind: "NeutronRouterFlavor",
				Resource: "neutronrouterflavors.neutron.openstack-sync.io", ReadyRetries: 30, ReadyDelay: 10 * time.Second, ReadyBudget: DefaultReadyBudget,
				RunBudget: DefaultRunBudget, ProgressCrontab: DefaultProgressCrontab, Profile: profile.OpenStackSync}
			tt.want(&want)
			assert.Equal(t, want, got)
		})
	}
}

func TestTarget(t *testing.T) {
	c := Config{APIVersion: "neutron.openstack-sync.io/v1alpha1", Resource: "neutronrouterflavors.neutron.openstack-sync.io"}
	require.NoError(t, c.CheckTarget())
	assert.Equal(t, []string{"neutron.openstack-sync.io", "v1alpha1", "neutronrouterflavors"}, []string{c.Group(), c.Version(), c.Plural()})
	for _, bad := range []Config{{APIVersion: "v1", Resource: "x.y"}, {APIVersion: "g/", Resource: "x.y"}, {APIVersion: "g/v", Resource: ".y"}} {
		assert.ErrorContains(t, bad.CheckTarget(), "cannot derive a CRD request target", bad)
	}
}

func TestConfigDocumentGolden(t *testing.T) {
	tests := []struct {
		golden    string
		env       map[string]string
		lifecycle bool
		err       string
	}{
		// A disabled hook reads nothing else, so a broken value elsewhere does not matter.
		{golden: "disabled.json", env: map[string]string{"P_READY_RETRIES": "x"}},
		{golden: "disabled.json", env: map[string]string{"P_ENABLED": "false", "P_CRD_KIND": ""}},
		// A crontab alone does not enable the hook.
		{golden: "disabled.json", env: map[string]string{"P_SYNC_CRONTAB": "0 * * * *"}},
		{golden: "enabled-namespaced.json", env: with(base(), "POD_NAMESPACE", "openstack", "P_SYNC_CRONTAB", " 0 * * * * ")},
		{golden: "enabled-cluster-wide.json", env: with(base(), "POD_NAMESPACE", "", "P_SYNC_CRONTAB", "   ")},
		// A lifecycle plugin adds the progress schedule; a plugin that is not one never gets it.
		{golden: "enabled-lifecycle.json", lifecycle: true, env: with(base(), "POD_NAMESPACE", "openstack", "P_SYNC_CRONTAB", "0 * * * *")},
		{golden: "enabled-lifecycle-custom.json", lifecycle: true, env: with(base(), "POD_NAMESPACE", "openstack", "P_PROGRESS_CRONTAB", " */10 * * * * * ")},
		{golden: "enabled-cluster-wide.json", lifecycle: true, env: with(base(), "POD_NAMESPACE", "", "P_PROGRESS_CRONTAB", "")},
		{golden: "enabled-namespaced.json", env: with(base(), "POD_NAMESPACE", "openstack", "P_SYNC_CRONTAB", "0 * * * *", "P_PROGRESS_CRONTAB", "* * * * * *")},
		// High availability adds the lease schedule, which carries the snapshot for a takeover.
		{golden: "enabled-ha.json", env: with(base(), "POD_NAMESPACE", "openstack", "OPENSTACK_SYNC_LEASE_NAME", "oso",
			"OPENSTACK_SYNC_LEASE_NAMESPACE", "openstack", "OPENSTACK_SYNC_LEASE_HOLDER", "oso-7d9f-x2")},
		// A shard selects its CRs and watches every shard's for the prune, in the same reach.
		{golden: "enabled-shard-labels.json", env: with(base(), "POD_NAMESPACE", "openstack", "P_SYNC_CRONTAB", "0 * * * *",
			"OPENSTACK_SYNC_SHARD_LABEL_SELECTOR", `{"matchLabels": {"shard": "a"}, "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}]}`)},
		{golden: "enabled-shard-namespaces.json", env: with(base(), "POD_NAMESPACE", "",
			"OPENSTACK_SYNC_SHARD_NAMESPACES", " team-b,team-a , team-b")},
		{env: with(base(), "POD_NAMESPACE", "openstack", "OPENSTACK_SYNC_SHARD_NAMESPACES", "team-a"),
			err: "OPENSTACK_SYNC_SHARD_NAMESPACES needs a cluster-wide hook (POD_NAMESPACE unset, the chart's rbac.clusterWide): POD_NAMESPACE=openstack limits the hook to that namespace"},
		{env: with(base(), "OPENSTACK_SYNC_SHARD_NAMESPACES", "team-a,Team_B"), err: `OPENSTACK_SYNC_SHARD_NAMESPACES holds "Team_B", which is not a namespace name`},
		{env: with(base(), "OPENSTACK_SYNC_SHARD_LABEL_SELECTOR", `{"matchLabel": {"shard": "a"}}`),
			err: `OPENSTACK_SYNC_SHARD_LABEL_SELECTOR must be a label selector as JSON ({"matchLabels": {...}, "matchExpressions": [...]}): json: unknown field "matchLabel"`},
		{env: with(base(), "OPENSTACK_SYNC_SHARD_LABEL_SELECTOR", `{"matchLabels": {"shard": "a"}}, {"matchLabels": {"shard": "b"}}`),
			err: `OPENSTACK_SYNC_SHARD_LABEL_SELECTOR must be a label selector as JSON ({"matchLabels": {...}, "matchExpressions": [...]}): invalid character ',' after top-level value`},
		{env: with(base(), "OPENSTACK_SYNC_SHARD_LABEL_SELECTOR", `{}`), err: "OPENSTACK_SYNC_SHARD_LABEL_SELECTOR selects every CR"},
		{env: with(base(), "OPENSTACK_SYNC_SHARD_LABEL_SELECTOR", `{"matchExpressions": [{"key": "shard", "operator": "In"}]}`),
			err: "OPENSTACK_SYNC_SHARD_LABEL_SELECTOR matchExpressions[0] (shard In) needs values"},
		{env: with(base(), "OPENSTACK_SYNC_SHARD_LABEL_SELECTOR", `{"matchExpressions": [{"key": "shard", "operator": "Exists", "values": ["a"]}]}`),
			err: "matchExpressions[0] (shard Exists) takes no values"},
		{env: with(base(), "OPENSTACK_SYNC_SHARD_LABEL_SELECTOR", `{"matchExpressions": [{"key": "shard", "operator": "Is"}]}`),
			err: `matchExpressions[0] has operator "Is"; want In, NotIn, Exists or DoesNotExist`},
		{env: with(base(), "OPENSTACK_SYNC_LEASE_NAME", "oso", "OPENSTACK_SYNC_LEASE_NAMESPACE", "openstack"),
			err: "OPENSTACK_SYNC_LEASE_HOLDER is required"},
		{env: with(base(), "OPENSTACK_SYNC_LEASE_NAME", "oso", "OPENSTACK_SYNC_LEASE_NAMESPACE", "openstack",
			"OPENSTACK_SYNC_LEASE_HOLDER", "p", "OPENSTACK_SYNC_LEASE_DURATION", "60.5"), err: "OPENSTACK_SYNC_LEASE_DURATION must be whole seconds, at least 40"},
		{env: map[string]string{"P_ENABLED": "TRUE"}, err: "P_ENABLED must be true or false"},
		{env: with(base(), "P_CRD_KIND", ""), err: "P_CRD_KIND is required"},
		{env: with(base(), "P_READY_DELAY", "soon"), err: "P_READY_DELAY must be a number"},
	}
	for _, tt := range tests {
		t.Run(tt.golden+tt.err, func(t *testing.T) {
			doc, err := ConfigDocument(env(tt.env), "P", "neutron-router-flavors", tt.lifecycle)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			if os.Getenv("UPDATE_GOLDEN") != "" {
				require.NoError(t, os.WriteFile(filepath.Join("testdata", tt.golden), doc.Marshal(), 0o644))
			}
			want, err := os.ReadFile(filepath.Join("testdata", tt.golden))
			require.NoError(t, err)
			assert.Equal(t, string(want), string(doc.Marshal()))
		})
	}
}

func with(m map[string]string, kv ...string) map[string]string {
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestLoadKubeLimit(t *testing.T) {
	tests := []struct {
		name string
		set  map[string]string
		want KubeLimit
		err  string
	}{
		{name: "defaults", want: KubeLimit{QPS: DefaultKubeQPS, Burst: DefaultKubeBurst}},
		{name: "both set", set: map[string]string{"OPENSTACK_SYNC_KUBE_QPS": " 200 ", "OPENSTACK_SYNC_KUBE_BURST": "400"},
			want: KubeLimit{QPS: 200, Burst: 400}},
		{name: "fractional rate", set: map[string]string{"OPENSTACK_SYNC_KUBE_QPS": "0.5"}, want: KubeLimit{QPS: 0.5, Burst: DefaultKubeBurst}},
		{name: "no limit", set: map[string]string{"OPENSTACK_SYNC_KUBE_QPS": "0"}, want: KubeLimit{QPS: 0, Burst: DefaultKubeBurst}},
		{name: "word", set: map[string]string{"OPENSTACK_SYNC_KUBE_QPS": "fast"}, err: "OPENSTACK_SYNC_KUBE_QPS must be a number of requests per second"},
		{name: "negative", set: map[string]string{"OPENSTACK_SYNC_KUBE_QPS": "-1"}, err: "OPENSTACK_SYNC_KUBE_QPS must be a number of requests per second, 0 or more"},
		{name: "nan", set: map[string]string{"OPENSTACK_SYNC_KUBE_QPS": "NaN"}, err: "OPENSTACK_SYNC_KUBE_QPS must be"},
		{name: "infinite", set: map[string]string{"OPENSTACK_SYNC_KUBE_QPS": "inf"}, err: "OPENSTACK_SYNC_KUBE_QPS must be"},
		{name: "zero burst", set: map[string]string{"OPENSTACK_SYNC_KUBE_BURST": "0"}, err: "OPENSTACK_SYNC_KUBE_BURST must be at least 1"},
		{name: "fractional burst", set: map[string]string{"OPENSTACK_SYNC_KUBE_BURST": "1.5"}, err: "OPENSTACK_SYNC_KUBE_BURST must be an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadKubeLimit(env(tt.set))
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
