// Package shelloperator runs a hook the way shell-operator v1.20 does, against a fakekube.Server:
// it asks the hook for its configuration (`--config`), then builds the binding-context arrays
// shell-operator would send (Synchronization, Event, Schedule, onStartup), writes each to a file
// and runs the hook with BINDING_CONTEXT_PATH and KUBECONFIG set.
//
// Events come from the fake's event log, so every change a hook run makes (a finalizer, a status
// patch) becomes an event for the next run, as it does with the real operator and API server.
// Queued contexts of one queue are delivered as one run, as executionMinInterval coalescing does.
//
// Not simulated: jq filters other than ".", the host's own (hookenv.ObjectFilter) and none, label
// and field selectors, `group`
// bindings, crontab timing (the caller decides when a schedule fires), and applying operations a
// hook writes to KUBERNETES_PATCH_PATH (reported as an error instead).
package shelloperator

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
)

// Config is the part of a hook's `--config` document the simulator acts on.
type Config struct {
	ConfigVersion string              `json:"configVersion"`
	OnStartup     *int                `json:"onStartup,omitempty"`
	Kubernetes    []KubernetesBinding `json:"kubernetes,omitempty"`
	Schedule      []ScheduleBinding   `json:"schedule,omitempty"`
}

// KubernetesBinding is one `kubernetes` entry of a hook configuration.
type KubernetesBinding struct {
	Name                         string   `json:"name"`
	APIVersion                   string   `json:"apiVersion"`
	Kind                         string   `json:"kind"`
	ExecuteHookOnEvent           []string `json:"executeHookOnEvent,omitempty"`
	ExecuteHookOnSynchronization *bool    `json:"executeHookOnSynchronization,omitempty"`
	JQFilter                     string   `json:"jqFilter,omitempty"`
	IncludeSnapshotsFrom         []string `json:"includeSnapshotsFrom,omitempty"`
	KeepFullObjectsInMemory      *bool    `json:"keepFullObjectsInMemory,omitempty"`
	Queue                        string   `json:"queue,omitempty"`
	Group                        string   `json:"group,omitempty"`
	LabelSelector                any      `json:"labelSelector,omitempty"`
	FieldSelector                any      `json:"fieldSelector,omitempty"`
	Namespace                    *struct {
		NameSelector *struct {
			MatchNames []string `json:"matchNames"`
		} `json:"nameSelector,omitempty"`
	} `json:"namespace,omitempty"`
}

// ScheduleBinding is one `schedule` entry of a hook configuration.
type ScheduleBinding struct {
	Name                 string   `json:"name"`
	Crontab              string   `json:"crontab"`
	IncludeSnapshotsFrom []string `json:"includeSnapshotsFrom,omitempty"`
	Queue                string   `json:"queue,omitempty"`
}

// defaultQueue is shell-operator's queue for bindings that name none.
const defaultQueue = "main"

// ParseConfig decodes and checks a `--config` document. Everything the simulator cannot reproduce
// faithfully is an error naming the binding, so a demo never silently differs from the operator.
func ParseConfig(data []byte) (Config, error) {
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return Config{}, fmt.Errorf("hook --config output is not a JSON hook configuration: %w", err)
	}
	if c.ConfigVersion != "v1" {
		return Config{}, fmt.Errorf("hook --config: configVersion is %q, want v1", c.ConfigVersion)
	}
	if c.OnStartup == nil && len(c.Kubernetes) == 0 && len(c.Schedule) == 0 {
		return Config{}, fmt.Errorf("hook --config: no binding (onStartup, kubernetes or schedule)")
	}
	names := map[string]bool{}
	for _, b := range c.Kubernetes {
		switch {
		case b.Name == "":
			return Config{}, fmt.Errorf("hook --config: a kubernetes binding has no name")
		case b.APIVersion == "" || b.Kind == "":
			return Config{}, fmt.Errorf("hook --config: kubernetes binding %q needs apiVersion and kind", b.Name)
		case b.JQFilter != "" && b.JQFilter != "." && b.JQFilter != hookenv.ObjectFilter:
			return Config{}, fmt.Errorf("hook --config: kubernetes binding %q: jqFilter %q is not simulated (only \".\" and the host's own)", b.Name, b.JQFilter)
		case b.Group != "":
			return Config{}, fmt.Errorf("hook --config: kubernetes binding %q: group bindings are not simulated", b.Name)
		case b.LabelSelector != nil || b.FieldSelector != nil:
			return Config{}, fmt.Errorf("hook --config: kubernetes binding %q: label and field selectors are not simulated", b.Name)
		}
		for _, e := range b.ExecuteHookOnEvent {
			if !slices.Contains([]string{"Added", "Modified", "Deleted"}, e) {
				return Config{}, fmt.Errorf("hook --config: kubernetes binding %q: unknown event type %q", b.Name, e)
			}
		}
		names[b.Name] = true
	}
	check := func(kind, binding string, from []string) error {
		for _, f := range from {
			if !names[f] {
				return fmt.Errorf("hook --config: %s binding %q includes snapshots from %q, which is not a kubernetes binding", kind, binding, f)
			}
		}
		return nil
	}
	for _, b := range c.Kubernetes {
		if err := check("kubernetes", b.Name, b.IncludeSnapshotsFrom); err != nil {
			return Config{}, err
		}
	}
	for _, s := range c.Schedule {
		if s.Name == "" || strings.TrimSpace(s.Crontab) == "" {
			return Config{}, fmt.Errorf("hook --config: a schedule binding needs a name and a crontab")
		}
		if err := check("schedule", s.Name, s.IncludeSnapshotsFrom); err != nil {
			return Config{}, err
		}
	}
	return c, nil
}

func (b KubernetesBinding) queue() string {
	if b.Queue == "" {
		return defaultQueue
	}
	return b.Queue
}

func (b KubernetesBinding) keepFullObjects() bool {
	return b.KeepFullObjectsInMemory == nil || *b.KeepFullObjectsInMemory
}

func (b KubernetesBinding) onSynchronization() bool {
	return b.ExecuteHookOnSynchronization == nil || *b.ExecuteHookOnSynchronization
}

// watches reports whether the binding sees objects of namespace. Without a namespace selector the
// watch is cluster-wide.
func (b KubernetesBinding) watches(namespace string) bool {
	if b.Namespace == nil || b.Namespace.NameSelector == nil {
		return true
	}
	return slices.Contains(b.Namespace.NameSelector.MatchNames, namespace)
}

func (b KubernetesBinding) firesOn(t string) bool {
	if b.ExecuteHookOnEvent == nil {
		// shell-operator's default is every event type.
		return true
	}
	return slices.Contains(b.ExecuteHookOnEvent, t)
}

func (s ScheduleBinding) queue() string {
	if s.Queue == "" {
		return defaultQueue
	}
	return s.Queue
}
