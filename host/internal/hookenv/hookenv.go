// Package hookenv reads the hook's environment contract (docs/contract.md §1.3) and builds the document
// shell-operator asks for with --config (docs/contract.md §1.2).
//
// Parsing is strict on purpose: a chart typo such as PRUNE=True must stop the hook with a line that
// names the variable, not silently mean false.
package hookenv

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/profile"
)

// LookupFunc reads one environment variable, like os.LookupEnv.
type LookupFunc func(name string) (string, bool)

// DefaultSecretNamespace is where credential Secrets are read when neither the CR nor the pod
// names a namespace.
const DefaultSecretNamespace = "openstack"

// DefaultReadyBudget bounds one run's readiness waits over all its credential groups: the
// defaults (30 retries, 10 s apart) allow 5 minutes to one group.
const DefaultReadyBudget = 10 * time.Minute

// DefaultRunBudget bounds how long one run keeps starting reconciles. shell-operator runs a
// queue's tasks one at a time, so a run that never ends holds every later event of the plugin
// (and its periodic sync) behind it; the CRs left over are picked up by the retry.
const DefaultRunBudget = 20 * time.Minute

// Config is the hook configuration of one plugin, read from <P>_* and the global variables.
type Config struct {
	Prefix      string
	BindingName string

	Enabled bool
	// APIVersion is <group>/<version> of the watched CRD.
	APIVersion string
	Kind       string
	// Resource is <plural>.<group>.
	Resource      string
	StatusEnabled bool
	Prune         bool
	SyncCrontab   string
	// ProgressCrontab schedules the progress runs of a lifecycle plugin ("" for none).
	ProgressCrontab string
	ReadyRetries    int
	ReadyDelay      time.Duration
	// ReadyBudget bounds all readiness waits of one run together (0: unbounded).
	ReadyBudget time.Duration
	// RunBudget is how long one run may keep starting reconciles (0: unbounded); see
	// docs/operating.md, "Cadence".
	RunBudget time.Duration
	// PodNamespace is POD_NAMESPACE, "" when unset.
	PodNamespace string
	// Lease is the plugin's high-availability lease; nil with one replica.
	Lease *Lease
	// Shard is the part of the kind's CRs this release reconciles; nil for all of them.
	Shard *Shard
	// Profile names the identifiers the hook works under (<P>_PROFILE): the finalizer it holds
	// and the shape of the status it writes (docs/migrating.md).
	Profile profile.Profile
	// OtherAPIVersion and OtherResource name the same kind under the other profile's CRD
	// (<P>_OTHER_CRD_API_VERSION, <P>_OTHER_CRD_RESOURCE); "" when unknown. A run refuses to act
	// while CRs exist there too.
	OtherAPIVersion, OtherResource string
}

// Other is the other profile's CRD as a Target without namespace or name; ok is false when the
// configuration names none.
func (c Config) Other() (group, version, plural string, ok bool) {
	if c.OtherAPIVersion == "" {
		return "", "", "", false
	}
	group, version, _ = strings.Cut(c.OtherAPIVersion, "/")
	plural, _, _ = strings.Cut(c.OtherResource, ".")
	return group, version, plural, true
}

// Group, Version and Plural address the CRD in API requests.
func (c Config) Group() string   { g, _, _ := strings.Cut(c.APIVersion, "/"); return g }
func (c Config) Version() string { _, v, _ := strings.Cut(c.APIVersion, "/"); return v }
func (c Config) Plural() string  { p, _, _ := strings.Cut(c.Resource, "."); return p }

// CheckTarget reports whether the CRD identity can address a request (docs/contract.md §5.2).
func (c Config) CheckTarget() error {
	if c.Group() == "" || c.Version() == "" || c.Plural() == "" {
		return fmt.Errorf("cannot derive a CRD request target from api_version=%q and resource=%q",
			c.APIVersion, c.Resource)
	}
	return nil
}

// Error is a configuration error; its text is the one line an operator needs.
type Error struct {
	Name string
	msg  string
}

func (e *Error) Error() string { return e.Name + " " + e.msg }

func errorf(name, format string, args ...any) error {
	return &Error{Name: name, msg: fmt.Sprintf(format, args...)}
}

// Bool reads a strict boolean: exactly "true" or "false"; unset gives def.
func Bool(lookup LookupFunc, name string, def bool) (bool, error) {
	v, ok := lookup(name)
	if !ok {
		return def, nil
	}
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errorf(name, "must be true or false")
}

// Int reads a base-10 integer (surrounding spaces allowed); unset gives def.
func Int(lookup LookupFunc, name string, def int) (int, error) {
	v, ok := lookup(name)
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return 0, errorf(name, "must be an integer")
	}
	return int(n), nil
}

// Seconds reads a non-negative, finite number of seconds; unset gives def.
func Seconds(lookup LookupFunc, name string, def time.Duration) (time.Duration, error) {
	v, ok := lookup(name)
	if !ok {
		return def, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0, errorf(name, "must be a number")
	}
	// A sleep of NaN, infinity or a negative time has no meaning; a huge value would overflow.
	if math.IsNaN(f) || f < 0 || f > math.MaxInt64/float64(time.Second) {
		return 0, errorf(name, "must be a number of seconds between 0 and %d", int64(math.MaxInt64/int64(time.Second)))
	}
	return time.Duration(f * float64(time.Second)), nil
}

// RequestLimit is the plugin's OpenStack request rate limit: <P>_REQUEST_RATE requests per second
// (unset or 0: unlimited) with bursts of <P>_REQUEST_BURST (default 1). It is read by probe and
// reconcile hooks alike, so one plugin cannot flood a cloud whatever it is doing.
type RequestLimit struct {
	Rate  float64
	Burst int
}

// LoadRequestLimit reads <P>_REQUEST_RATE and <P>_REQUEST_BURST.
func LoadRequestLimit(lookup LookupFunc, prefix string) (RequestLimit, error) {
	l := RequestLimit{Burst: 1}
	rateName := prefix + "_REQUEST_RATE"
	if v, ok := lookup(rateName); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return RequestLimit{}, errorf(rateName, "must be a number")
		}
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return RequestLimit{}, errorf(rateName, "must be a number of requests per second, 0 or more (0: unlimited)")
		}
		l.Rate = f
	}
	burstName := prefix + "_REQUEST_BURST"
	burst, err := Int(lookup, burstName, 1)
	if err != nil {
		return RequestLimit{}, err
	}
	if burst < 1 {
		return RequestLimit{}, errorf(burstName, "must be at least 1")
	}
	l.Burst = burst
	return l, nil
}

// Required reads a variable that must be set and non-empty.
func Required(lookup LookupFunc, name string) (string, error) {
	v, ok := lookup(name)
	if !ok || v == "" {
		return "", errorf(name, "is required but not set; ensure the Helm chart has injected it before the hook runs")
	}
	return v, nil
}

// Enabled reads <P>_ENABLED alone: a disabled hook reads nothing else.
func Enabled(lookup LookupFunc, prefix string) (bool, error) {
	return Bool(lookup, prefix+"_ENABLED", false)
}

// LoadProfile reads <P>_PROFILE: unset or empty is this project's profile (Decision 6: any other
// value than a known profile's name is an error naming the variable).
func LoadProfile(lookup LookupFunc, prefix string) (profile.Profile, error) {
	name := prefix + "_" + profile.Variable
	v, _ := lookup(name)
	p, err := profile.Parse(v)
	if err != nil {
		return "", errorf(name, "%v", err)
	}
	return p, nil
}

// Load reads the whole configuration of an enabled hook. The first bad variable is the error.
func Load(lookup LookupFunc, prefix, bindingName string) (c Config, err error) {
	c = Config{Prefix: prefix, BindingName: bindingName}
	c.PodNamespace, _ = lookup("POD_NAMESPACE")
	crontab, _ := lookup(prefix + "_SYNC_CRONTAB")
	c.SyncCrontab = strings.TrimSpace(crontab)
	c.ProgressCrontab = DefaultProgressCrontab
	if crontab, ok := lookup(prefix + "_PROGRESS_CRONTAB"); ok {
		c.ProgressCrontab = strings.TrimSpace(crontab)
	}
	if c.Enabled, err = Enabled(lookup, prefix); err != nil {
		return Config{}, err
	}
	if c.Profile, err = LoadProfile(lookup, prefix); err != nil {
		return Config{}, err
	}
	c.OtherAPIVersion, _ = lookup(prefix + "_OTHER_CRD_API_VERSION")
	c.OtherResource, _ = lookup(prefix + "_OTHER_CRD_RESOURCE")
	if (c.OtherAPIVersion == "") != (c.OtherResource == "") {
		return Config{}, errorf(prefix+"_OTHER_CRD_API_VERSION", "and %s_OTHER_CRD_RESOURCE must be set together (the chart sets both)", prefix)
	}
	if g, v, pl, ok := c.Other(); ok && (g == "" || v == "" || pl == "") {
		return Config{}, errorf(prefix+"_OTHER_CRD_API_VERSION", "and %s_OTHER_CRD_RESOURCE must name <group>/<version> and <plural>.<group>; got %q and %q",
			prefix, c.OtherAPIVersion, c.OtherResource)
	}
	if c.APIVersion, err = Required(lookup, prefix+"_CRD_API_VERSION"); err != nil {
		return Config{}, err
	}
	if c.Kind, err = Required(lookup, prefix+"_CRD_KIND"); err != nil {
		return Config{}, err
	}
	if c.Resource, err = Required(lookup, prefix+"_CRD_RESOURCE"); err != nil {
		return Config{}, err
	}
	if c.StatusEnabled, err = Bool(lookup, prefix+"_STATUS_ENABLED", false); err != nil {
		return Config{}, err
	}
	if c.Prune, err = Bool(lookup, prefix+"_PRUNE", false); err != nil {
		return Config{}, err
	}
	if c.ReadyRetries, err = Int(lookup, prefix+"_READY_RETRIES", 30); err != nil {
		return Config{}, err
	}
	if c.ReadyRetries < 0 {
		return Config{}, errorf(prefix+"_READY_RETRIES", "must not be negative (0 skips the readiness probe)")
	}
	if c.ReadyDelay, err = Seconds(lookup, prefix+"_READY_DELAY", 10*time.Second); err != nil {
		return Config{}, err
	}
	if c.ReadyBudget, err = Seconds(lookup, prefix+"_READY_BUDGET", DefaultReadyBudget); err != nil {
		return Config{}, err
	}
	if c.RunBudget, err = Seconds(lookup, prefix+"_RUN_BUDGET", DefaultRunBudget); err != nil {
		return Config{}, err
	}
	if c.Lease, err = LoadLease(lookup, bindingName); err != nil {
		return Config{}, err
	}
	if c.Shard, err = LoadShard(lookup, c.PodNamespace); err != nil {
		return Config{}, err
	}
	return c, nil
}
