package hookenv

import "encoding/json"

// Document is the hook configuration shell-operator reads from --config.
type Document struct {
	ConfigVersion string    `json:"configVersion"`
	Settings      Settings  `json:"settings"`
	OnStartup     int       `json:"onStartup,omitempty"`
	Kubernetes    []Watch   `json:"kubernetes,omitempty"`
	Schedule      []Crontab `json:"schedule,omitempty"`
}

// Settings coalesce a backlog of events into one run at most every 30 s.
type Settings struct {
	ExecutionMinInterval string `json:"executionMinInterval"`
	ExecutionBurst       int    `json:"executionBurst"`
}

// Watch is one kubernetes binding.
type Watch struct {
	Name               string   `json:"name"`
	APIVersion         string   `json:"apiVersion"`
	Kind               string   `json:"kind"`
	ExecuteHookOnEvent []string `json:"executeHookOnEvent"`
	// ExecuteHookOnSynchronization false: a watch whose snapshot only rides along.
	ExecuteHookOnSynchronization *bool  `json:"executeHookOnSynchronization,omitempty"`
	JQFilter                     string `json:"jqFilter"`
	// KeepFullObjectsInMemory false: shell-operator keeps, and hands the hook, only the filter's
	// result (ObjectFilter), not every whole object.
	KeepFullObjectsInMemory *bool              `json:"keepFullObjectsInMemory,omitempty"`
	IncludeSnapshotsFrom    []string           `json:"includeSnapshotsFrom,omitempty"`
	Queue                   string             `json:"queue"`
	Namespace               *NamespaceSelector `json:"namespace,omitempty"`
	LabelSelector           *LabelSelector     `json:"labelSelector,omitempty"`
}

// NamespaceSelector limits a watch to the listed namespaces.
type NamespaceSelector struct {
	NameSelector struct {
		MatchNames []string `json:"matchNames"`
	} `json:"nameSelector"`
}

// Crontab is one schedule binding.
type Crontab struct {
	Name                 string   `json:"name"`
	Crontab              string   `json:"crontab"`
	IncludeSnapshotsFrom []string `json:"includeSnapshotsFrom"`
	Queue                string   `json:"queue"`
}

// ObjectFilter is the jqFilter of the CR watches: shell-operator keeps of each CR, and writes into
// every binding context, only what the host reads (docs/contract.md §1.4): the identity and
// apiVersion/kind a plugin is told, the resourceVersion finalizer patches are guarded by, the UID a
// release checks, the generation the feedback-loop rule compares, the finalizers and
// deletionTimestamp, the spec and the status. Everything else (metadata.managedFields above all,
// annotations such as kubectl's last-applied-configuration, labels) stays with the API server;
// it was most of every object's bytes, and shell-operator held each object twice ("." kept the
// filter's copy beside the object) and wrote both into every context (docs/scaling.md).
//
// The filter is total: metadata that is not an object passes as it is, so an unreadable CR is
// still refused naming the field (docs/contract.md §3). A member the CR lacks comes out null,
// which the host reads as absent. resourceVersion changes with every write, so the filter's
// result changes whenever the object does and every watch event still fires.
const ObjectFilter = `{apiVersion, kind, metadata: (.metadata | if type == "object" then ` +
	`{name, namespace, uid, resourceVersion, generation, finalizers, deletionTimestamp} else . end), spec, status}`

// ScheduleBinding is the binding name of the periodic full run.
const ScheduleBinding = "periodic sync"

// ProgressBinding is the binding name of a lifecycle plugin's progress run, which reconciles only
// the CRs whose status is Progressing (docs/abi.md, "Progress runs").
const ProgressBinding = "progress sync"

// DefaultProgressCrontab runs the progress binding every 30 seconds, which is also the hook's
// executionMinInterval: a shorter schedule would only queue runs the interval then merges.
const DefaultProgressCrontab = "*/30 * * * * *"

var settings = Settings{ExecutionMinInterval: "30s", ExecutionBurst: 1}

// DisabledDocument is the no-op configuration: shell-operator needs at least one binding, and an
// onStartup binding runs nothing that matters.
func DisabledDocument() Document {
	return Document{ConfigVersion: "v1", Settings: settings, OnStartup: 10}
}

// EnabledDocument watches the CRD (in POD_NAMESPACE when set) and, with a crontab, schedules the
// periodic full run. Queues are named after the binding so a slow hook blocks only itself.
func EnabledDocument(c Config) Document {
	w := Watch{
		Name:                    c.BindingName,
		APIVersion:              c.APIVersion,
		Kind:                    c.Kind,
		ExecuteHookOnEvent:      []string{"Added", "Modified", "Deleted"},
		JQFilter:                ObjectFilter,
		KeepFullObjectsInMemory: new(bool),
		IncludeSnapshotsFrom:    []string{c.BindingName},
		Queue:                   c.BindingName,
	}
	if c.PodNamespace != "" {
		w.Namespace = &NamespaceSelector{}
		w.Namespace.NameSelector.MatchNames = []string{c.PodNamespace}
	}
	snapshots := []string{c.BindingName}
	watches := []Watch{w}
	if c.Shard != nil {
		// The claims watch sees every shard's CRs in the same reach, without the shard's own
		// selector, and never runs the hook: its snapshot rides along so a prune spares them.
		claims := w
		claims.Name = ClaimsBinding(c.BindingName)
		claims.ExecuteHookOnEvent = []string{}
		claims.ExecuteHookOnSynchronization = new(bool)
		claims.IncludeSnapshotsFrom = nil
		watches = append(watches, claims)
		snapshots = append(snapshots, claims.Name)
		watches[0].LabelSelector = c.Shard.LabelSelector
		if len(c.Shard.Namespaces) > 0 {
			watches[0].Namespace = &NamespaceSelector{}
			watches[0].Namespace.NameSelector.MatchNames = c.Shard.Namespaces
		}
	}
	watches[0].IncludeSnapshotsFrom = snapshots
	d := Document{ConfigVersion: "v1", Settings: settings, Kubernetes: watches}
	schedule := func(name, crontab string) {
		d.Schedule = append(d.Schedule, Crontab{Name: name, Crontab: crontab, IncludeSnapshotsFrom: snapshots, Queue: c.BindingName})
	}
	if c.SyncCrontab != "" {
		schedule(ScheduleBinding, c.SyncCrontab)
	}
	if c.ProgressCrontab != "" {
		schedule(ProgressBinding, c.ProgressCrontab)
	}
	if c.Lease != nil {
		// The snapshot rides along: a run that takes the lease over reconciles every CR.
		schedule(LeaseBinding, LeaseCrontab)
	}
	return d
}

// Marshal renders the document as shell-operator reads it: JSON, 2-space indent, final newline.
func (d Document) Marshal() []byte {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		panic(err) // only plain strings and ints: cannot fail
	}
	return append(b, '\n')
}

// ConfigDocument is what --config prints for a CR plugin: the disabled shape unless
// <P>_ENABLED=true, in which case the CRD identity must be complete. Only a lifecycle plugin
// gets the progress schedule: no other plugin ever writes a Progressing status.
func ConfigDocument(lookup LookupFunc, prefix, bindingName string, lifecycle bool) (Document, error) {
	enabled, err := Enabled(lookup, prefix)
	if err != nil || !enabled {
		return DisabledDocument(), err
	}
	c, err := Load(lookup, prefix, bindingName)
	if err != nil {
		return Document{}, err
	}
	if !lifecycle {
		c.ProgressCrontab = ""
	}
	return EnabledDocument(c), nil
}
