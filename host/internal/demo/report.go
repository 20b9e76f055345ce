package demo

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
)

// crRow is one CR as the status table shows it.
type crRow struct {
	Kind, Namespace, Name   string
	Generation, Observed    string
	Synced, Reason, Message string
	Finalizer, Terminating  bool
}

func (r crRow) key() string { return r.Kind + "/" + r.Namespace + "/" + r.Name }

func rowOf(r fakekube.Resource, o map[string]any) crRow {
	meta, _ := o["metadata"].(map[string]any)
	status, _ := o["status"].(map[string]any)
	row := crRow{Kind: r.Kind, Generation: "-", Observed: "-", Synced: "-", Reason: "-"}
	row.Namespace, _ = meta["namespace"].(string)
	row.Name, _ = meta["name"].(string)
	if g, ok := meta["generation"]; ok {
		row.Generation = fmt.Sprint(g)
	}
	if g, ok := status["observedGeneration"]; ok {
		row.Observed = fmt.Sprint(g)
	}
	if s, ok := status["syncStatus"].(string); ok {
		row.Synced = s
	}
	row.Message, _ = status["message"].(string)
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if cm["type"] == "Ready" {
			if reason, ok := cm["reason"].(string); ok {
				row.Reason = reason
			}
		}
	}
	fins, _ := meta["finalizers"].([]any)
	for _, f := range fins {
		if f == resource.Finalizer {
			row.Finalizer = true
		}
	}
	row.Terminating = meta["deletionTimestamp"] != nil
	return row
}

func (d *driver) captureKube() map[string]crRow {
	rows := map[string]crRow{}
	for _, h := range d.crHooks() {
		objs, _ := d.kube.List(h.Resource, "", "")
		for _, o := range objs {
			r := rowOf(h.Resource, o)
			rows[r.key()] = r
		}
	}
	return rows
}

// report prints the act's before/after: the CR status table, OpenStack changes, the hooks'
// Kubernetes writes and notes.
func (d *driver) report(act string, before, after map[string]crRow, cloudBefore, cloudAfter cloudState, kubeRequests []fakekube.Request) {
	out := d.out
	fmt.Fprintln(out, "\n  Kubernetes (after; CHANGE compares with before the act):")
	writeStatusTable(out, before, after)
	for _, k := range sortedKeys(after) {
		if r := after[k]; r.Synced == "Failed" {
			fmt.Fprintf(out, "    %s %s/%s: %s\n", r.Kind, r.Namespace, r.Name, r.Message)
		}
	}

	changes := diffCloud(cloudBefore, cloudAfter)
	fmt.Fprintln(out, "\n  OpenStack:")
	if len(changes) == 0 {
		fmt.Fprintln(out, "    no resource created, updated or deleted")
	}
	for _, c := range changes {
		fmt.Fprintf(out, "    %s\n", c)
	}
	// Writes is the cloud's own split of the Neutron and Ironic requests; the rest are reads.
	writes := d.cloud.Writes()
	api := 0
	for _, r := range d.cloud.Requests() {
		if r.Service != fakecloud.Identity {
			api++
		}
	}
	reads := api - len(writes)
	fmt.Fprintf(out, "    %d Neutron/Ironic reads, %d writes", reads, len(writes))
	if len(writes) > 0 {
		fmt.Fprint(out, ":")
	}
	fmt.Fprintln(out)
	for _, w := range writes {
		fmt.Fprintf(out, "      %s\n", w)
	}

	var notes []string
	kubeWrites := summariseKubeWrites(kubeRequests)
	if kubeWrites != "" {
		notes = append(notes, "hooks wrote to Kubernetes: "+kubeWrites)
	} else {
		notes = append(notes, "hooks wrote nothing to Kubernetes")
	}
	for _, r := range kubeRequests {
		if r.Method == http.MethodPatch && r.Code == http.StatusNotFound && !strings.HasSuffix(r.Path, "/status") {
			notes = append(notes, "a finalizer release answered 404 for an object already gone: a Deleted event still shows the finalizer "+
				"(the last stored state), and the framework counts a 404 naming the object as released")
			break
		}
	}
	if strings.HasSuffix(act, "converge") && len(writes) == 0 && len(changes) == 0 {
		notes = append(notes, "converged: the schedule pass only read")
	}
	if strings.HasSuffix(act, "converge") && kubeWrites != "" {
		d.fail("converge: the schedule pass wrote to Kubernetes: %s", kubeWrites)
	}
	if strings.HasSuffix(act, "delete") {
		for k, b := range before {
			switch _, still := after[k]; {
			case still:
			case b.Finalizer:
				notes = append(notes, fmt.Sprintf("%s %s: cleanup ran, the finalizer was released and the CR is gone", b.Kind, b.Name))
			default:
				notes = append(notes, fmt.Sprintf("%s %s carried no finalizer (its plugin's cleanup policy does not prune), so it went at once and its OpenStack resource stays", b.Kind, b.Name))
			}
		}
	}
	sort.Strings(notes)
	fmt.Fprintln(out, "\n  Notes:")
	for _, n := range notes {
		fmt.Fprintf(out, "    - %s\n", n)
	}
}

func writeStatusTable(out io.Writer, before, after map[string]crRow) {
	keys := make([]string, 0, len(after)+len(before))
	for k := range after {
		keys = append(keys, k)
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "    KIND\tNAME\tGEN/OBSERVED\tSYNCED\tREASON\tFINALIZER\tCHANGE\tMESSAGE")
	for _, k := range keys {
		b, had := before[k]
		a, has := after[k]
		change := ""
		switch {
		case !had:
			change = "new"
		case !has:
			a = b
			change = "gone"
		case a != b:
			change = describeRowChange(b, a)
		}
		fin := "-"
		if a.Finalizer {
			fin = "yes"
		}
		synced := a.Synced
		if a.Terminating && has {
			synced += " (terminating)"
		}
		fmt.Fprintf(tw, "    %s\t%s/%s\t%s/%s\t%s\t%s\t%s\t%s\t%s\n", a.Kind, a.Namespace, a.Name,
			a.Generation, a.Observed, synced, a.Reason, fin, change, trimmed(a.Message, 70))
	}
	_ = tw.Flush()
}

func describeRowChange(b, a crRow) string {
	var parts []string
	if b.Generation != a.Generation {
		parts = append(parts, "spec")
	}
	if b.Synced != a.Synced || b.Reason != a.Reason || b.Message != a.Message || b.Observed != a.Observed {
		parts = append(parts, "status")
	}
	if b.Finalizer != a.Finalizer {
		if a.Finalizer {
			parts = append(parts, "+finalizer")
		} else {
			parts = append(parts, "-finalizer")
		}
	}
	if b.Terminating != a.Terminating {
		parts = append(parts, "terminating")
	}
	return strings.Join(parts, ",")
}

// summariseKubeWrites counts the hooks' write requests by kind: status patches and other patches.
func summariseKubeWrites(reqs []fakekube.Request) string {
	counts := map[string]int{}
	for _, r := range reqs {
		if r.Method == http.MethodGet {
			continue
		}
		what := strings.ToLower(r.Method)
		if strings.HasSuffix(r.Path, "/status") {
			what += " status"
		} else if r.ContentType == fakekube.JSONPatchType {
			what += " metadata (finalizer)"
		}
		if r.Code >= 300 {
			what += " rejected " + strconv.Itoa(r.Code)
		}
		counts[what]++
	}
	parts := make([]string, 0, len(counts))
	for k, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// editSpec makes a small spec change a plugin acts on and describes it: append to
// spec.description, else narrow a numeric range (spec.maximum down by one, which can never
// overlap another range), else set spec.description.
func editSpec(obj map[string]any) string {
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		obj["spec"] = spec
	}
	if desc, ok := spec["description"].(string); ok {
		spec["description"] = strings.TrimSpace(desc + " (edited by the demo)")
		return fmt.Sprintf("spec.description %q -> %q", desc, spec["description"])
	}
	maxV, okMax := number(spec["maximum"])
	minV, okMin := number(spec["minimum"])
	if okMax && okMin && maxV > minV {
		spec["maximum"] = maxV - 1
		return fmt.Sprintf("spec.maximum %d -> %d", maxV, maxV-1)
	}
	spec["description"] = "edited by the demo"
	return `spec.description set to "edited by the demo"`
}

func number(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case float64:
		return int64(n), n == float64(int64(n))
	case int64:
		return n, true
	case int:
		return int64(n), true
	}
	return 0, false
}

func sortedKeys(rows map[string]crRow) []string {
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
