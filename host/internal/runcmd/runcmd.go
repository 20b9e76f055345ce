// Package runcmd is `openstack-sync run`: one hook pass of a plugin with no Kubernetes at all.
// CRs come from YAML files, credentials from a clouds.yaml file; the pass is the hook's own
// (planner, runner, status, finalizers, prune), with the Kubernetes API replaced by the files
// read in memory, and it prints each CR's would-be status and every OpenStack request.
package runcmd

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/openstack-sync/openstack-sync/host/internal/hook"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
	"github.com/openstack-sync/openstack-sync/host/internal/status"
)

// SecretName is the credentials Secret a CR without cloudCredentialsRef.secretName is given: the
// one a run makes from --clouds.
const SecretName = "clouds-yaml"

const usage = `usage: openstack-sync run --plugin FILE (--clouds clouds.yaml [--cloud NAME] | --embedded-cloud)
          [--state FILE] [--prune] [--dry-run] [--deleted CR.yaml]... [--set KEY=VALUE]...
          [--namespace NS] [--resource PLURAL] [--source NAME=URL]... [--embedded-nautobot SEED.yaml] CR.yaml...

One hook pass without Kubernetes: the CRs of the files (several documents per file allowed) are
reconciled with the credentials of clouds.yaml, deleted ones (--deleted) are cleaned up, and each
CR's would-be status, notes and finalizers and every OpenStack request are printed. A CR's status
is what its file's status: says, else what --state FILE kept from the last run (nothing at
first); the run then writes every CR's status back to FILE, with the embedded cloud's content, so
create, edit and delete are three runs. --dry-run sends reads only: each write is recorded and
answered as OpenStack would (a created resource gets a made-up id and shows in later reads), so
the pass goes on and the output ends with the plan of every write it would send; it leaves FILE
as it was. --embedded-cloud (openstack-sync-dev only) runs against an in-process OpenStack, fresh
or the one --state kept.
--source allow-lists a source outside OpenStack (docs/abi.md section 8) for the plugin; a
source's credential is a Secret (kind Secret, apiVersion v1) among the files, which is not a CR.
--embedded-nautobot (openstack-sync-dev only) serves the IPAM of SEED.yaml (prefixes, locations,
site) from an in-process Nautobot: every CR's spec.nautobot.url is pointed at it, and it accepts the
tokens of the Secrets the CRs name.
`

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

type options struct {
	plugin, clouds, cloud, namespace, resource, state string
	prune, dryRun, embedded                           bool
	deleted, set, files, collections, sources         []string
	// nautobot is the seed file of --embedded-nautobot; startNautobot serves it.
	nautobot      string
	startNautobot EmbeddedNautobot
}

// EmbeddedNautobot starts an in-process Nautobot with the IPAM of a seed file, for
// --embedded-nautobot: it points the CR specs that name a Nautobot at it, accepts the tokens their
// Secrets (by name) hold, and returns its URL, its site (the hook's SITE) and how to stop it. Only
// the development binary has one.
type EmbeddedNautobot func(seed string, specs []map[string]any, secrets map[string]map[string][]byte) (url, site string, stop func(), err error)

// EmbeddedCloud starts an in-process OpenStack for --embedded-cloud, serving the extra resource
// collections named by --collection and holding what saved holds (what a previous run's Save
// returned; nil for a fresh cloud). Only the development binary has one: the production binary
// links no fake.
type EmbeddedCloud func(collections []string, saved []byte) (Embedded, error)

// Embedded is a running in-process OpenStack.
type Embedded struct {
	// CloudsYAML is its clouds.yaml; Cloud the cloud in it a run uses by default.
	CloudsYAML []byte
	Cloud      string
	// Save returns what it holds, for the next run's --state.
	Save func() ([]byte, error)
	Stop func()
}

func parse(args []string, stderr io.Writer, embedded EmbeddedCloud, startNautobot EmbeddedNautobot) (options, error) {
	var o options
	var deleted, set, collections, sources multi
	fs := flag.NewFlagSet("openstack-sync run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	fs.StringVar(&o.plugin, "plugin", "", "the plugin module (required)")
	fs.StringVar(&o.clouds, "clouds", "", "a clouds.yaml file (required)")
	fs.StringVar(&o.cloud, "cloud", "", "the cloud of clouds.yaml every CR uses (default: each CR's cloudCredentialsRef.cloudName)")
	fs.StringVar(&o.namespace, "namespace", "default", "the namespace of CRs that name none")
	fs.StringVar(&o.resource, "resource", "", "the CRD's plural (default: the kind in lower case plus s)")
	fs.StringVar(&o.state, "state", "", "a file that keeps the CRs' statuses (and the embedded cloud) between runs; created when missing")
	fs.BoolVar(&o.prune, "prune", false, "run with PRUNE=true")
	fs.BoolVar(&o.dryRun, "dry-run", false, "send only reads; record writes without sending them")
	fs.Var(&deleted, "deleted", "a file of CRs being deleted (repeatable)")
	fs.Var(&set, "set", "a hook setting KEY=VALUE, as the chart's hook.env (repeatable)")
	fs.BoolVar(&o.embedded, "embedded-cloud", false, "run against a fresh in-process OpenStack (openstack-sync-dev only)")
	fs.Var(&collections, "collection", "with --embedded-cloud: serve a resource collection of your own, "+
		"SERVICE:PATH:KEY[:notags], e.g. network:v2.0/address-scopes:address_scope:notags (repeatable)")
	o.startNautobot = startNautobot
	fs.Var(&sources, "source", "allow-list a source outside OpenStack for the plugin, NAME=URL (repeatable)")
	fs.StringVar(&o.nautobot, "embedded-nautobot", "", "serve the IPAM of this seed file from an in-process Nautobot (openstack-sync-dev only)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.deleted, o.set, o.files, o.collections, o.sources = deleted, set, fs.Args(), collections, sources
	for _, kv := range o.sources {
		if k, v, ok := strings.Cut(kv, "="); !ok || k == "" || v == "" {
			return o, fmt.Errorf("--source %q is not NAME=URL", kv)
		}
	}
	for _, kv := range o.set {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return o, fmt.Errorf("--set %q is not KEY=VALUE", kv)
		}
	}
	switch {
	case o.plugin == "":
		return o, errors.New("--plugin is required")
	case o.nautobot != "" && startNautobot == nil:
		return o, errors.New("--embedded-nautobot is only in openstack-sync-dev: the production binary links no in-process Nautobot")
	case o.embedded && embedded == nil:
		return o, errors.New("--embedded-cloud is only in openstack-sync-dev: the production binary links no in-process cloud")
	case o.embedded && o.clouds != "":
		return o, errors.New("--clouds and --embedded-cloud exclude each other")
	case len(o.collections) > 0 && !o.embedded:
		return o, errors.New("--collection needs --embedded-cloud")
	case o.clouds == "" && !o.embedded:
		return o, errors.New("--clouds (or, in openstack-sync-dev, --embedded-cloud) is required")
	case len(o.files) == 0 && len(o.deleted) == 0:
		return o, errors.New("name at least one CR file")
	}
	return o, nil
}

// Main runs the command as the production binary has it: against a real cloud only.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return MainWith(ctx, args, stdout, stderr, nil)
}

// MainWith runs the command; embedded, when not nil, serves --embedded-cloud.
func MainWith(ctx context.Context, args []string, stdout, stderr io.Writer, embedded EmbeddedCloud) int {
	return MainWithNautobot(ctx, args, stdout, stderr, embedded, nil)
}

// MainWithNautobot is MainWith whose nautobot, when not nil, serves --embedded-nautobot.
func MainWithNautobot(ctx context.Context, args []string, stdout, stderr io.Writer, embedded EmbeddedCloud, nautobot EmbeddedNautobot) int {
	o, err := parse(args, stderr, embedded, nautobot)
	if errors.Is(err, flag.ErrHelp) {
		return hook.ExitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "openstack-sync run:", err)
		return hook.ExitUsage
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "openstack-sync run:", err)
		return hook.ExitFail
	}
	var st *state
	if o.state != "" {
		if st, err = readState(o.state); err != nil {
			return fail(err)
		}
		switch {
		case o.embedded && st.Cloud == nil && len(st.CRs) > 0:
			return fail(fmt.Errorf("--state %s was written by a run against a real cloud; give --embedded-cloud another file", o.state))
		case !o.embedded && st.Cloud != nil:
			return fail(fmt.Errorf("--state %s holds an embedded cloud; run it with --embedded-cloud, or give --clouds another file", o.state))
		}
	}
	var emb Embedded
	if o.embedded {
		var saved []byte
		if st != nil {
			saved = st.Cloud
		}
		if emb, err = embedded(o.collections, saved); err != nil {
			return fail(fmt.Errorf("--embedded-cloud: %w", err))
		}
		defer emb.Stop()
		dir, err := os.MkdirTemp("", "openstack-sync-run-")
		if err != nil {
			return fail(err)
		}
		defer os.RemoveAll(dir)
		o.clouds = filepath.Join(dir, "clouds.yaml")
		if err := os.WriteFile(o.clouds, emb.CloudsYAML, 0o600); err != nil {
			return fail(err)
		}
		o.cloud = cmp.Or(o.cloud, emb.Cloud)
	}
	code, err := run(ctx, o, st, stdout, stderr)
	if err != nil {
		return fail(err)
	}
	if st != nil && !o.dryRun {
		if o.embedded {
			if st.Cloud, err = emb.Save(); err != nil {
				return fail(err)
			}
		}
		if err := st.write(o.state); err != nil {
			return fail(err)
		}
	}
	return code
}

func run(ctx context.Context, o options, st *state, stdout, stderr io.Writer) (int, error) {
	clouds, err := os.ReadFile(o.clouds)
	if err != nil {
		return 0, fmt.Errorf("--clouds: %w", err)
	}
	secrets := map[string]map[string][]byte{}
	live, err := readCRs(o.files, o, false, secrets)
	if err != nil {
		return 0, err
	}
	gone, err := readCRs(o.deleted, o, true, secrets)
	if err != nil {
		return 0, err
	}
	set := map[string]string{}
	for _, kv := range o.set {
		k, v, _ := strings.Cut(kv, "=")
		set[k] = v
	}
	sources, err := allowList(o.sources)
	if err != nil {
		return 0, err
	}
	if o.nautobot != "" {
		stop, more, err := embedNautobot(o, append(slices.Clone(live), gone...), secrets, set)
		if err != nil {
			return 0, fmt.Errorf("--embedded-nautobot: %w", err)
		}
		defer stop()
		sources = append(sources, more...)
	}
	if st != nil {
		st.apply(live, gone)
	}
	boundBefore := map[string]string{}
	for _, obj := range gone {
		if status, ok := obj["status"].(map[string]any); ok {
			boundBefore[crKey(obj)], _ = status["id"].(string)
		}
	}
	out, err := Pass{Plugin: o.plugin, Clouds: clouds, Cloud: o.cloud, Namespace: o.namespace, Resource: o.resource,
		Prune: o.prune, DryRun: o.dryRun, Set: set, Live: live, Deleted: gone, Log: stderr,
		LogLevel: cmp.Or(os.Getenv("LOG_LEVEL"), "info"), Sources: sources, Secrets: secrets}.Run(ctx)
	if err != nil {
		return 0, err
	}
	if st != nil && !o.dryRun {
		st.record(out.CRs)
	}
	report(stdout, out, o.dryRun, boundBefore)
	if st != nil && o.dryRun {
		fmt.Fprintf(stdout, "\n(dry run: %s left as it was)\n", o.state)
	}
	return out.Code, nil
}

// readCRs reads every document of the files as one CR; deleted ones are given a deletion time
// and the framework's finalizer, as a CR being deleted under the framework has. A Secret (v1) is
// not a CR: its data goes to secrets, by name, for the sources' credentials.
func readCRs(files []string, o options, deleted bool, secrets map[string]map[string][]byte) ([]map[string]any, error) {
	var out []map[string]any
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for i, doc := range splitYAML(b) {
			var obj map[string]any
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				return nil, fmt.Errorf("%s document %d: %w", f, i+1, err)
			}
			if len(obj) == 0 {
				continue
			}
			if obj["kind"] == "Secret" && obj["apiVersion"] == "v1" {
				if err := addSecret(obj, secrets); err != nil {
					return nil, fmt.Errorf("%s document %d: %w", f, i+1, err)
				}
				continue
			}
			if err := complete(obj, o.namespace, o.cloud, deleted); err != nil {
				return nil, fmt.Errorf("%s document %d: %w", f, i+1, err)
			}
			out = append(out, obj)
		}
	}
	return out, nil
}

func splitYAML(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), b...), []byte("\n---")) {
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

// complete fills in what the API server would have set on a stored CR, and points its
// credentials at the run's clouds.yaml.
func complete(obj map[string]any, namespace, cloud string, deleted bool) error {
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil || meta["name"] == nil {
		return errors.New("metadata.name is missing")
	}
	name, _ := meta["name"].(string)
	if meta["namespace"] == nil {
		meta["namespace"] = namespace
	}
	ns, _ := meta["namespace"].(string)
	if meta["uid"] == nil {
		meta["uid"] = "run-" + ns + "-" + name
	}
	if meta["generation"] == nil {
		meta["generation"] = 1
	}
	if meta["resourceVersion"] == nil {
		meta["resourceVersion"] = "1"
	}
	if deleted {
		meta["deletionTimestamp"] = "2000-01-01T00:00:00Z"
		fs, _ := meta["finalizers"].([]any)
		if !slices.Contains(fs, any(resource.Finalizer)) {
			meta["finalizers"] = append(fs, resource.Finalizer)
		}
	}
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return errors.New("spec is missing")
	}
	ref, _ := spec["cloudCredentialsRef"].(map[string]any)
	if ref == nil {
		ref = map[string]any{"secretName": SecretName}
		spec["cloudCredentialsRef"] = ref
	}
	if cloud != "" {
		ref["cloudName"] = cloud
	}
	if ref["cloudName"] == nil {
		return errors.New("spec.cloudCredentialsRef.cloudName is missing; pass --cloud")
	}
	if ref["secretName"] == nil {
		ref["secretName"] = SecretName
	}
	return nil
}

func oneKind(objs []map[string]any) (apiVersion, kind string, err error) {
	for _, obj := range objs {
		av, _ := obj["apiVersion"].(string)
		k, _ := obj["kind"].(string)
		if av == "" || k == "" || !strings.Contains(av, "/") {
			return "", "", errors.New("every CR needs apiVersion (group/version) and kind")
		}
		if apiVersion == "" {
			apiVersion, kind = av, k
		}
		if av != apiVersion || k != kind {
			return "", "", fmt.Errorf("one run reconciles one kind: %s %s and %s %s", apiVersion, kind, av, k)
		}
	}
	return apiVersion, kind, nil
}

// report prints each CR's status, notes and finalizers after the pass, then every request, then
// (dry run) the write plan with each write's body. boundBefore is status.id of each deleted CR
// before the pass, to say what its delete did in OpenStack.
func report(w io.Writer, out Outcome, dryRun bool, boundBefore map[string]string) {
	fmt.Fprintf(w, "plugin %s %s\n", out.Info.Name, out.Info.Version)
	for _, now := range out.CRs {
		nm, _ := now["metadata"].(map[string]any)
		deleting := ""
		if nm["deletionTimestamp"] != nil {
			deleting = " (deleted)"
		}
		fmt.Fprintf(w, "\n%s %s%s\n", now["kind"], key(nm["namespace"].(string), nm["name"].(string)), deleting)
		if status, ok := now["status"].(map[string]any); ok {
			b, _ := yaml.Marshal(map[string]any{"status": status})
			fmt.Fprint(w, indent(string(b)))
			msg, _ := status["message"].(string)
			if notes := notesOf(msg); len(notes) > 0 {
				fmt.Fprintln(w, "  notes:")
				for _, n := range notes {
					fmt.Fprintf(w, "    - %s\n", n)
				}
			}
		} else {
			fmt.Fprintln(w, "  status: (not written)")
		}
		fs, _ := nm["finalizers"].([]any)
		fmt.Fprintf(w, "  finalizers: %v\n", fs)
		if deleting != "" && !slices.Contains(fs, any(resource.Finalizer)) {
			fmt.Fprintf(w, "  openstack: %s\n", deletedWhat(out.Calls, boundBefore[crKey(now)]))
		}
	}
	heading := "\nOpenStack requests"
	if dryRun {
		heading += " (dry run: writes were not sent)"
	}
	fmt.Fprintln(w, heading+":")
	for _, c := range out.Calls {
		result := fmt.Sprint(c.Status)
		switch {
		case c.Error != "":
			result = c.Error
		case !c.Sent && !isWrite(c.Method):
			result = fmt.Sprintf("%d, answered from the plan", c.Status)
		case !c.Sent:
			result = "not sent (planned)"
		}
		fmt.Fprintf(w, "  %s %s %s %s -> %s\n", c.Cloud, c.Service, c.Method, c.Target(), result)
	}
	if !dryRun {
		return
	}
	n := 0
	fmt.Fprintln(w, "\nWrite plan:")
	for _, c := range out.Calls {
		if c.Sent || !isWrite(c.Method) {
			continue
		}
		n++
		fmt.Fprintf(w, "  %d. %s %s %s %s", n, c.Cloud, c.Service, c.Method, c.Target())
		if c.Planned != "" {
			fmt.Fprintf(w, " (%s)", c.Planned)
		}
		fmt.Fprintln(w)
		if c.Body != "" {
			fmt.Fprintf(w, "     %s\n", c.Body)
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "  (no writes: everything is converged)")
	}
}

// deletedWhat says what the delete of a CR whose finalizer went did in OpenStack: the DELETE of
// the resource its status named, or nothing at all when the pass deleted nothing (the CR named
// no resource and none was found for it, or the plugin's cleanup policy deletes nothing).
func deletedWhat(calls []Call, id string) string {
	deletes := 0
	for _, c := range calls {
		if c.Method != "DELETE" {
			continue
		}
		deletes++
		if id != "" && strings.Contains(c.Path, id) {
			if !c.Sent {
				return "would delete " + c.Path + " (planned)"
			}
			return "deleted " + c.Path
		}
	}
	if deletes == 0 {
		if id == "" {
			return "nothing to delete (the CR names no resource in status.id, and none was found for it)"
		}
		return "nothing deleted (" + id + ", its status.id, was already gone or is not the plugin's to delete)"
	}
	return fmt.Sprintf("%d DELETE request(s) in the pass; see the requests below", deletes)
}

// notesOf returns the notes of a Synced message (status.SyncedMessage joins them after this
// marker), so the report lists them one per line.
func notesOf(message string) []string {
	_, notes, ok := strings.Cut(message, status.NotesMarker)
	if !ok {
		return nil
	}
	return strings.Split(notes, status.NotesSeparator)
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n") + "\n"
}
