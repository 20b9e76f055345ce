package shelloperator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
)

// Hook is an executable as shell-operator runs it.
type Hook struct {
	// Command is the argv of a run; `--config` is appended to ask for the configuration.
	Command []string
	// Env is the hook's whole environment (KEY=VALUE); the simulator adds BINDING_CONTEXT_PATH,
	// KUBECONFIG, KUBERNETES_PATCH_PATH and METRICS_PATH.
	Env []string
}

// Simulator is one hook under a simulated shell-operator.
type Simulator struct {
	kube       *fakekube.Server
	hook       Hook
	kubeconfig string
	dir        string
	config     Config
	resources  map[string]fakekube.Resource // by kubernetes binding name
	cursor     int                          // event-log position already delivered
	checksums  map[string]string            // last filterResult per binding/namespace/name
	runs       int
}

// Run is one execution of the hook.
type Run struct {
	Queue string
	// Contexts is the binding-context array the hook received.
	Contexts []map[string]any
	ExitCode int
	Stdout   string
	Stderr   string
}

// New asks the hook for its configuration and checks that every kubernetes binding addresses a
// resource kube serves. dir receives the binding-context files; kubeconfig is the path given to
// the hook as KUBECONFIG.
func New(ctx context.Context, kube *fakekube.Server, hook Hook, kubeconfig, dir string) (*Simulator, error) {
	if len(hook.Command) == 0 {
		return nil, errors.New("shelloperator: the hook has no command")
	}
	cmd := exec.CommandContext(ctx, hook.Command[0], append(hook.Command[1:], "--config")...)
	cmd.Env = hook.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("shelloperator: %s --config: %w: %s", strings.Join(hook.Command, " "), err, strings.TrimSpace(stderr.String()))
	}
	cfg, err := ParseConfig(stdout.Bytes())
	if err != nil {
		return nil, err
	}
	return newSimulator(kube, hook, cfg, kubeconfig, dir)
}

func newSimulator(kube *fakekube.Server, hook Hook, cfg Config, kubeconfig, dir string) (*Simulator, error) {
	s := &Simulator{
		kube: kube, hook: hook, kubeconfig: kubeconfig, dir: dir, config: cfg,
		resources: map[string]fakekube.Resource{}, checksums: map[string]string{},
	}
	for _, b := range cfg.Kubernetes {
		r, ok := kube.ResourceFor(b.APIVersion, b.Kind)
		if !ok {
			return nil, fmt.Errorf("shelloperator: kubernetes binding %q watches %s %s, which the API does not serve (is its CRD loaded?)", b.Name, b.APIVersion, b.Kind)
		}
		s.resources[b.Name] = r
	}
	return s, nil
}

// Config is the hook's parsed configuration.
func (s *Simulator) Config() Config { return s.config }

// Startup runs the onStartup binding, if the hook has one.
func (s *Simulator) Startup(ctx context.Context) (*Run, error) {
	if s.config.OnStartup == nil {
		return nil, nil
	}
	return s.run(ctx, defaultQueue, []map[string]any{{"binding": "onStartup"}})
}

// Synchronization delivers, per kubernetes binding, the objects that exist now, as shell-operator
// does when it starts its watches. Earlier events are covered by it and never delivered.
func (s *Simulator) Synchronization(ctx context.Context) ([]*Run, error) {
	_, s.cursor = s.kube.Events(-1)
	var qs queues
	for _, b := range s.config.Kubernetes {
		live, err := s.watched(b)
		if err != nil {
			return nil, err
		}
		objects := make([]any, 0, len(live))
		for _, o := range live {
			s.remember(b, o)
			objects = append(objects, Item(b, o))
		}
		if !b.onSynchronization() {
			continue
		}
		qs.add(b.queue(), map[string]any{"binding": b.Name, "type": "Synchronization", "objects": objects})
	}
	return s.runQueues(ctx, qs)
}

// Schedule fires the schedule binding name once.
func (s *Simulator) Schedule(ctx context.Context, name string) (*Run, error) {
	for _, sb := range s.config.Schedule {
		if sb.Name != name {
			continue
		}
		c := map[string]any{"binding": sb.Name, "type": "Schedule"}
		if err := s.attachSnapshots(c, sb.IncludeSnapshotsFrom); err != nil {
			return nil, err
		}
		return s.run(ctx, sb.queue(), []map[string]any{c})
	}
	return nil, fmt.Errorf("shelloperator: the hook has no schedule binding %q", name)
}

// Pending is the number of not yet delivered events the hook's bindings would fire on.
func (s *Simulator) Pending() int {
	events, _ := s.kube.Events(s.cursor)
	n := 0
	for _, e := range events {
		for _, b := range s.config.Kubernetes {
			if s.matches(b, e) {
				n++
			}
		}
	}
	return n
}

// Events delivers every event since the last delivery, one run per queue holding all of that
// queue's contexts in order, and returns no run when nothing fired.
func (s *Simulator) Events(ctx context.Context) ([]*Run, error) {
	events, end := s.kube.Events(s.cursor)
	s.cursor = end
	var qs queues
	for _, e := range events {
		for _, b := range s.config.Kubernetes {
			if !s.matches(b, e) {
				continue
			}
			changed := s.remember(b, e.Object)
			if e.Type == fakekube.Modified && !changed {
				// shell-operator drops a Modified event whose filter result did not change.
				continue
			}
			if e.Type == fakekube.Deleted {
				delete(s.checksums, checksumKey(b, e.Object))
			}
			if !b.firesOn(string(e.Type)) {
				continue
			}
			c := map[string]any{"binding": b.Name, "type": "Event", "watchEvent": string(e.Type)}
			// shell-operator copies the item's fields, so without keepFullObjectsInMemory an
			// event carries no object either.
			for k, v := range Item(b, e.Object) {
				c[k] = v
			}
			qs.add(b.queue(), c)
		}
	}
	return s.runQueues(ctx, qs)
}

func (s *Simulator) matches(b KubernetesBinding, e fakekube.Event) bool {
	return e.Resource == s.resources[b.Name] && b.watches(e.Namespace)
}

// remember records the checksum shell-operator keeps for obj (of the filter result, or of the
// whole object without a jqFilter) and reports whether it changed.
func (s *Simulator) remember(b KubernetesBinding, obj map[string]any) bool {
	var data []byte
	if b.JQFilter == "" {
		data, _ = json.Marshal(obj)
	} else {
		data, _ = json.Marshal(filterResult(b, obj))
	}
	k := checksumKey(b, obj)
	changed := s.checksums[k] != string(data)
	s.checksums[k] = string(data)
	return changed
}

func checksumKey(b KubernetesBinding, obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	return b.Name + "\x00" + ns + "\x00" + name
}

// withSnapshots attaches, at run time, the snapshots each context's binding includes: the hook
// sees the state when it runs, not when the event was queued.
func (s *Simulator) withSnapshots(contexts []map[string]any) error {
	for _, c := range contexts {
		name, _ := c["binding"].(string)
		for _, b := range s.config.Kubernetes {
			if b.Name == name {
				if err := s.attachSnapshots(c, b.IncludeSnapshotsFrom); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (s *Simulator) attachSnapshots(c map[string]any, from []string) error {
	if len(from) == 0 {
		return nil
	}
	snaps := map[string]any{}
	for _, name := range from {
		for _, b := range s.config.Kubernetes {
			if b.Name != name {
				continue
			}
			items, err := s.snapshot(b)
			if err != nil {
				return err
			}
			snaps[name] = items
		}
	}
	c["snapshots"] = snaps
	return nil
}

// snapshot lists the binding's objects as shell-operator keeps them: sorted by namespace and
// name, each an item with the full object (keepFullObjectsInMemory) and the filter result.
func (s *Simulator) snapshot(b KubernetesBinding) ([]any, error) {
	objs, err := s.watched(b)
	if err != nil {
		return nil, err
	}
	items := make([]any, 0, len(objs))
	for _, o := range objs {
		items = append(items, Item(b, o))
	}
	return items, nil
}

// watched lists the objects the binding's watch sees, sorted by namespace and name.
func (s *Simulator) watched(b KubernetesBinding) ([]fakekube.Object, error) {
	objs, err := s.kube.List(s.resources[b.Name], "", "")
	if err != nil {
		return nil, err
	}
	out := objs[:0]
	for _, o := range objs {
		meta, _ := o["metadata"].(map[string]any)
		ns, _ := meta["namespace"].(string)
		if b.watches(ns) {
			out = append(out, o)
		}
	}
	return out, nil
}

// Item is obj as the binding's snapshots and events carry it: the object unless
// keepFullObjectsInMemory is false, and the jqFilter's result when the binding has a filter.
func Item(b KubernetesBinding, obj map[string]any) map[string]any {
	it := map[string]any{}
	if b.keepFullObjects() {
		it["object"] = obj
	}
	if fr := filterResult(b, obj); fr != nil {
		it["filterResult"] = fr
	}
	return it
}

// filterResult applies the binding's jqFilter: "." (identity), the host's own (hookenv.ObjectFilter,
// in Go below) or none. TestSimulatorMatchesShellOperator holds both to the real shell-operator's jq.
func filterResult(b KubernetesBinding, obj map[string]any) any {
	switch b.JQFilter {
	case ".":
		return obj
	case hookenv.ObjectFilter:
		return hostFields(obj)
	}
	return nil
}

// hostFields is hookenv.ObjectFilter: the members it names, null where obj has none, and metadata
// as it is when it is not an object.
func hostFields(obj map[string]any) map[string]any {
	md := obj["metadata"]
	if m, ok := md.(map[string]any); ok {
		kept := map[string]any{}
		for _, k := range []string{"name", "namespace", "uid", "resourceVersion", "generation", "finalizers", "deletionTimestamp"} {
			kept[k] = m[k]
		}
		md = kept
	}
	return map[string]any{"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": md,
		"spec": obj["spec"], "status": obj["status"]}
}

// queues holds binding contexts by queue, the queues in the order they were first used.
type queues struct {
	order    []string
	contexts map[string][]map[string]any
}

func (qs *queues) add(queue string, c map[string]any) {
	if qs.contexts == nil {
		qs.contexts = map[string][]map[string]any{}
	}
	if _, seen := qs.contexts[queue]; !seen {
		qs.order = append(qs.order, queue)
	}
	qs.contexts[queue] = append(qs.contexts[queue], c)
}

// runQueues runs the hook once per queue, attaching snapshots just before each run.
func (s *Simulator) runQueues(ctx context.Context, qs queues) ([]*Run, error) {
	var runs []*Run
	for _, q := range qs.order {
		if err := s.withSnapshots(qs.contexts[q]); err != nil {
			return runs, err
		}
		r, err := s.run(ctx, q, qs.contexts[q])
		if err != nil {
			return runs, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// run writes contexts to a file and executes the hook once.
func (s *Simulator) run(ctx context.Context, queue string, contexts []map[string]any) (*Run, error) {
	s.runs++
	data, err := json.MarshalIndent(contexts, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("shelloperator: encode binding context: %w", err)
	}
	base := filepath.Join(s.dir, fmt.Sprintf("run-%03d", s.runs))
	contextPath := base + "-binding-context.json"
	patchPath := base + "-kubernetes-patch.json"
	metricsPath := base + "-metrics.json"
	if err := os.WriteFile(contextPath, data, 0o600); err != nil {
		return nil, fmt.Errorf("shelloperator: %w", err)
	}
	cmd := exec.CommandContext(ctx, s.hook.Command[0], s.hook.Command[1:]...)
	cmd.Env = append(append([]string(nil), s.hook.Env...),
		"BINDING_CONTEXT_PATH="+contextPath,
		"KUBECONFIG="+s.kubeconfig,
		"KUBERNETES_PATCH_PATH="+patchPath,
		"METRICS_PATH="+metricsPath,
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	run := &Run{Queue: queue, Contexts: contexts}
	err = cmd.Run()
	run.Stdout, run.Stderr = stdout.String(), stderr.String()
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		run.ExitCode = exitErr.ExitCode()
	case err != nil:
		return nil, fmt.Errorf("shelloperator: run %s: %w", strings.Join(s.hook.Command, " "), err)
	}
	if patch, _ := os.ReadFile(patchPath); len(bytes.TrimSpace(patch)) > 0 {
		return run, fmt.Errorf("shelloperator: the hook wrote operations to KUBERNETES_PATCH_PATH, which the simulator does not apply")
	}
	return run, nil
}

// Describe is a one-line summary of the run's contexts, e.g.
// "Event Modified openstack/a, Event Deleted openstack/b".
func (r *Run) Describe() string {
	parts := make([]string, 0, len(r.Contexts))
	for _, c := range r.Contexts {
		t, _ := c["type"].(string)
		switch t {
		case "Event":
			obj, ok := c["object"].(map[string]any)
			if !ok {
				obj, _ = c["filterResult"].(map[string]any)
			}
			meta, _ := obj["metadata"].(map[string]any)
			desc := fmt.Sprintf("Event %s %v/%v", c["watchEvent"], meta["namespace"], meta["name"])
			if meta["deletionTimestamp"] != nil {
				desc += " (deletionTimestamp set)"
			}
			parts = append(parts, desc)
		case "Synchronization":
			objs, _ := c["objects"].([]any)
			noun := "objects"
			if len(objs) == 1 {
				noun = "object"
			}
			parts = append(parts, fmt.Sprintf("Synchronization %v (%d %s)", c["binding"], len(objs), noun))
		case "":
			parts = append(parts, fmt.Sprint(c["binding"]))
		default:
			parts = append(parts, fmt.Sprintf("%s %v", t, c["binding"]))
		}
	}
	return strings.Join(parts, ", ")
}
