//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// syncWait bounds one wait for the operator. shell-operator runs a hook at most every 30 s
// (executionMinInterval), a run may wait for the previous one, and the first run compiles the
// plugin; two minutes is generous without hiding a hang.
const syncWait = 2 * time.Minute

// badSecret holds the examples' clouds with a wrong password.
const badSecret = "e2e-bad-credentials"

// TestLifecycle drives every plugin through create, edit, delete and PRUNE=false with the real
// shell-operator, host and plugins against the real cloud. It is one test because the phases
// share one operator, whose 30 s hook interval makes each phase cost a run.
func TestLifecycle(t *testing.T) {
	h := need(t)
	ctx := context.Background()
	ex := h.examples

	a := map[string]*unstructured.Unstructured{} // the examples as written
	b := map[string]*unstructured.Unstructured{} // a second CR of the plugins that hold finalizers
	for _, k := range kinds {
		a[k.kind] = ex.crs[k.kind].DeepCopy()
	}
	b[runbooks.kind] = renamed(a[runbooks.kind], "-b", "spec", "runbookName", "_E2E_B")
	b[routerFlavors.kind] = renamed(a[routerFlavors.kind], "-b", "spec", "name", "-e2e-b")
	bad := renamed(a[segmentRanges.kind], "-bad-credentials", "spec", "name", "-e2e-bad")
	require.NoError(t, unstructured.SetNestedField(bad.Object, badSecret, "spec", "cloudCredentialsRef", "secretName"))
	pools := newPoolScenario(t, h, a[subnetPools.kind])
	b[subnetPools.kind] = pools.adopted

	// A rerun against a kept cloud starts clean; the run cleans up after itself too.
	cleanOpenStack := func() {
		for _, u := range []*unstructured.Unstructured{a[runbooks.kind], b[runbooks.kind]} {
			assert.NoError(t, h.cloud.deleteRunbook(ctx, osName(u)))
		}
		for _, u := range []*unstructured.Unstructured{a[routerFlavors.kind], b[routerFlavors.kind]} {
			assert.NoError(t, h.cloud.deleteFlavor(ctx, osName(u)))
		}
		for _, u := range []*unstructured.Unstructured{a[segmentRanges.kind], bad} {
			assert.NoError(t, h.cloud.deleteSegmentRange(ctx, osName(u)))
		}
		pools.clean(t, ctx)
	}
	cleanOpenStack()
	t.Cleanup(cleanOpenStack)
	// What the subnet pools adopt and prune is there before the first run.
	pools.prepare(t, ctx)

	// Secrets and the first CRs exist before the operator starts, so its Synchronization run
	// reconciles them all at once.
	h.applySecrets(t, ctx)
	h.applyTokenSecrets(t, ctx)
	for _, k := range kinds {
		h.create(t, ctx, k, a[k.kind])
	}
	for _, k := range []kind{runbooks, routerFlavors, subnetPools} {
		h.create(t, ctx, k, b[k.kind])
	}
	require.NoError(t, h.startOperator(ctx))

	require.True(t, t.Run("synchronization reconciles every example", func(t *testing.T) {
		for _, k := range kinds {
			h.waitSynced(t, ctx, k, a[k.kind].GetName())
		}
		for _, k := range []kind{runbooks, routerFlavors, subnetPools} {
			h.waitSynced(t, ctx, k, b[k.kind].GetName())
		}
	}), "later phases build on this one")

	require.True(t, t.Run("the probe passed at start-up and compiled plugins are cached", func(t *testing.T) {
		var passed, succeeded bool
		for _, line := range strings.Split(h.operatorLog(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil || rec["hook"] != "openstack-probe" {
				continue
			}
			passed = passed || rec["msg"] == "connectivity check passed"
			succeeded = succeeded || (rec["msg"] == "Hook executed successfully" && rec["event"] == "onStartup")
		}
		assert.True(t, passed, "the probe's 'connectivity check passed' line")
		assert.True(t, succeeded, "shell-operator's 'Hook executed successfully' for the probe's onStartup run")
		// The chart's cache volume: runs after the first load compiled code instead of compiling.
		var compiled int
		require.NoError(t, filepath.WalkDir(filepath.Join(h.env.WorkDir, "wasm-cache"), func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				compiled++
			}
			return err
		}))
		assert.GreaterOrEqual(t, compiled, len(kinds)+1, "compiled modules in OPENSTACK_SYNC_CACHE_DIR")
	}), "later phases build on this one")

	require.True(t, t.Run("PRUNE=true puts the finalizer on plugins that prune", func(t *testing.T) {
		for _, k := range []kind{runbooks, routerFlavors, subnetPools} {
			cr := h.get(t, ctx, k, a[k.kind].GetName())
			assert.Contains(t, cr.GetFinalizers(), finalizer, "%s %s", k.kind, cr.GetName())
		}
		cr := h.get(t, ctx, segmentRanges, a[segmentRanges.kind].GetName())
		assert.NotContains(t, cr.GetFinalizers(), finalizer, "segment ranges are never pruned, so they hold no finalizer")
	}), "later phases build on this one")

	require.True(t, t.Run("OpenStack holds the resources with ownership markers", func(t *testing.T) {
		rb, err := h.cloud.runbook(ctx, osName(a[runbooks.kind]))
		require.NoError(t, err)
		require.NotNil(t, rb, "runbook %s missing in Ironic", osName(a[runbooks.kind]))
		extra, _ := rb["extra"].(map[string]any)
		assert.Equal(t, runbookMarkerValue, extra[markerKey], "runbook extra: %v", extra)
		assert.Equal(t, h.groupOf(a[runbooks.kind]), extra[groupKey], "the marker records the CR's credential group")
		steps, _ := a[runbooks.kind].Object["spec"].(map[string]any)["steps"].([]any)
		got, _ := rb["steps"].([]any)
		assert.Len(t, got, len(steps), "runbook steps")

		f, err := h.cloud.flavor(ctx, osName(a[routerFlavors.kind]))
		require.NoError(t, err)
		require.NotNil(t, f, "router flavor %s missing in Neutron", osName(a[routerFlavors.kind]))
		assert.Contains(t, f["description"], groupFlavorMarker(h.groupOf(a[routerFlavors.kind])))
		profiles, _ := f["service_profiles"].([]any)
		wantProfiles, _, _ := unstructured.NestedSlice(a[routerFlavors.kind].Object, "spec", "service_profiles")
		require.Len(t, profiles, len(wantProfiles), "profiles bound to the flavor")
		for _, id := range profiles {
			p, err := h.cloud.serviceProfile(ctx, fmt.Sprint(id))
			require.NoError(t, err)
			require.NotNil(t, p)
			assert.True(t, profileOwned(p), "service profile %v carries no marker: %v", id, p["metainfo"])
		}

		r, err := h.cloud.segmentRange(ctx, osName(a[segmentRanges.kind]))
		require.NoError(t, err)
		require.NotNil(t, r, "segment range %s missing in Neutron", osName(a[segmentRanges.kind]))
		for _, field := range []string{"minimum", "maximum"} {
			want, _, _ := unstructured.NestedFieldNoCopy(a[segmentRanges.kind].Object, "spec", field)
			assert.EqualValues(t, fmt.Sprint(want), fmt.Sprint(r[field]), "segment range %s", field)
		}

		pools.checkConverged(t, ctx)
	}), "later phases build on this one")

	// The b CRs are converged and nobody touches them from here on: the runs of the next phases
	// (which include them in their snapshots) must not write to them. A status field the CRD does
	// not declare, or a message that varies, would rewrite their status every run (Decisions 2, 3).
	quiet := map[string]string{}
	for _, k := range []kind{runbooks, routerFlavors, subnetPools} {
		quiet[k.kind] = h.get(t, ctx, k, b[k.kind].GetName()).GetResourceVersion()
	}

	require.True(t, t.Run("editing CRs updates OpenStack; bad credentials fail alone", func(t *testing.T) {
		h.edit(t, ctx, runbooks, a[runbooks.kind].GetName(), func(u *unstructured.Unstructured) {
			require.NoError(t, unstructured.SetNestedField(u.Object, "edited", "spec", "extra", "e2e"))
		})
		h.edit(t, ctx, routerFlavors, a[routerFlavors.kind].GetName(), func(u *unstructured.Unstructured) {
			require.NoError(t, unstructured.SetNestedField(u.Object, "edited by e2e", "spec", "description"))
		})
		var newMax int64
		h.edit(t, ctx, segmentRanges, a[segmentRanges.kind].GetName(), func(u *unstructured.Unstructured) {
			max, _, _ := unstructured.NestedInt64(u.Object, "spec", "maximum")
			min, _, _ := unstructured.NestedInt64(u.Object, "spec", "minimum")
			require.Greater(t, max, min, "the example segment range must span more than one id")
			newMax = max - 1
			require.NoError(t, unstructured.SetNestedField(u.Object, newMax, "spec", "maximum"))
		})
		h.edit(t, ctx, subnetPools, a[subnetPools.kind].GetName(), func(u *unstructured.Unstructured) {
			require.NoError(t, unstructured.SetNestedField(u.Object, "edited by e2e", "spec", "description"))
		})
		// Same plugin, same run as the edited range: one credential group fails, the other syncs.
		h.create(t, ctx, segmentRanges, bad)

		for _, k := range kinds {
			h.waitSynced(t, ctx, k, a[k.kind].GetName())
		}
		rb, err := h.cloud.runbook(ctx, osName(a[runbooks.kind]))
		require.NoError(t, err)
		require.NotNil(t, rb)
		extra, _ := rb["extra"].(map[string]any)
		assert.Equal(t, "edited", extra["e2e"], "runbook extra after the edit")
		f, err := h.cloud.flavor(ctx, osName(a[routerFlavors.kind]))
		require.NoError(t, err)
		require.NotNil(t, f)
		assert.True(t, strings.HasPrefix(fmt.Sprint(f["description"]), "edited by e2e"), "flavor description %q", f["description"])
		assert.Contains(t, f["description"], groupFlavorMarker(h.groupOf(a[routerFlavors.kind])))
		r, err := h.cloud.segmentRange(ctx, osName(a[segmentRanges.kind]))
		require.NoError(t, err)
		require.NotNil(t, r)
		assert.EqualValues(t, fmt.Sprint(newMax), fmt.Sprint(r["maximum"]))
		p, err := h.cloud.subnetPool(ctx, osName(a[subnetPools.kind]))
		require.NoError(t, err)
		require.NotNil(t, p)
		assert.Equal(t, "edited by e2e", p["description"])

		st := h.waitStatus(t, ctx, segmentRanges, bad.GetName(), "Failed")
		assert.Equal(t, "False", st.ready["status"])
		assert.Contains(t, st.message, badSecret, "the message names the Secret")
		assert.Contains(t, st.message, ex.clouds[0], "the message names the cloud")
		r, err = h.cloud.segmentRange(ctx, osName(bad))
		require.NoError(t, err)
		assert.Nil(t, r, "nothing is created with refused credentials")
	}), "later phases build on this one")

	// Every runbook CR is converged here, and none fails: the runbooks' runs may be replayed.
	require.True(t, t.Run("a converged run is replayed until the runbook is edited in Ironic, then reverted; a stray runbook is pruned", func(t *testing.T) {
		replayScenario(t, ctx, h, a[runbooks.kind], 2)
	}), "later phases build on this one")

	// Another credential group of the same plugins fails from here on (its Secret's password is
	// wrong): with per-group prunes (docs/contract.md §7.1) it holds back only its own group's, so
	// the deletions below still happen. Before, any failing CR skipped every prune of its plugin and
	// the deleted CRs below kept their finalizers.
	other := map[string]*unstructured.Unstructured{}
	require.True(t, t.Run("one group's failing CR holds back no other group's deletion", func(t *testing.T) {
		for _, k := range []kind{runbooks, routerFlavors, subnetPools} {
			suffix := "-e2e-other"
			if k == runbooks {
				suffix = "_E2E_OTHER" // a trait name
			}
			u := renamed(a[k.kind], "-other-group", append(osNameField(k), suffix)...)
			require.NoError(t, unstructured.SetNestedField(u.Object, badSecret, "spec", "cloudCredentialsRef", "secretName"))
			other[k.kind] = u
			h.create(t, ctx, k, u)
		}
		for _, k := range []kind{runbooks, routerFlavors, subnetPools} {
			h.waitStatus(t, ctx, k, other[k.kind].GetName(), "Failed")
		}
	}), "the deletions below run beside these failures")

	require.True(t, t.Run("deleting a CR with PRUNE=true deletes the resource, then releases the finalizer", func(t *testing.T) {
		gone := map[string]func() (bool, error){
			runbooks.kind: func() (bool, error) {
				rb, err := h.cloud.runbook(ctx, osName(a[runbooks.kind]))
				return rb == nil, err
			},
			routerFlavors.kind: func() (bool, error) {
				f, err := h.cloud.flavor(ctx, osName(a[routerFlavors.kind]))
				return f == nil, err
			},
			subnetPools.kind: func() (bool, error) { return pools.poolGone(ctx) },
		}
		for _, k := range []kind{runbooks, routerFlavors, subnetPools} {
			h.delete(t, ctx, k, a[k.kind].GetName())
		}
		for _, k := range []kind{runbooks, routerFlavors, subnetPools} {
			name := a[k.kind].GetName()
			// Checked in this order on every poll: once the CR is gone, the resource must already be.
			h.waitFor(t, syncWait, fmt.Sprintf("%s %s to be deleted", k.kind, name), func() (bool, string) {
				cr := h.getOrNil(t, ctx, k, name)
				if cr != nil {
					return false, fmt.Sprintf("still present, finalizers %v, status %v", cr.GetFinalizers(), cr.Object["status"])
				}
				resGone, err := gone[k.kind]()
				require.NoError(t, err)
				require.True(t, resGone, "%s %s: the finalizer was released while the OpenStack resource still exists", k.kind, name)
				return true, ""
			})
		}
		// The flavor's owned profiles went with it, unless the b flavor still uses them.
		f, err := h.cloud.flavor(ctx, osName(b[routerFlavors.kind]))
		require.NoError(t, err)
		require.NotNil(t, f, "pruning one flavor must not touch another CR's flavor")
		rb, err := h.cloud.runbook(ctx, osName(b[runbooks.kind]))
		require.NoError(t, err)
		require.NotNil(t, rb, "pruning one runbook must not touch another CR's runbook")
		p, err := h.cloud.subnetPool(ctx, e2eAdoptedPool)
		require.NoError(t, err)
		require.NotNil(t, p, "pruning one subnet pool must not touch another CR's pool")
		pools.checkScopesKept(t, ctx)

		// Segment ranges hold no finalizer and are never pruned: the CR goes, the range stays.
		h.delete(t, ctx, segmentRanges, a[segmentRanges.kind].GetName())
		h.waitFor(t, 10*time.Second, "segment range CR to be deleted", func() (bool, string) {
			return h.getOrNil(t, ctx, segmentRanges, a[segmentRanges.kind].GetName()) == nil, "still present"
		})
		// The plugin's lifecycle detaches on delete (spec.managedOptions.onDelete: detach is its
		// only policy), so real Neutron must still hold the range once the CR is gone.
		kept, err := h.cloud.segmentRange(ctx, osName(a[segmentRanges.kind]))
		require.NoError(t, err)
		assert.NotNil(t, kept, "a detached segment range must outlive its CR")
	}), "later phases build on this one")

	require.True(t, t.Run("converged CRs are not rewritten by later runs", func(t *testing.T) {
		for _, k := range []kind{runbooks, routerFlavors, subnetPools} {
			cr := h.get(t, ctx, k, b[k.kind].GetName())
			assert.Equal(t, quiet[k.kind], cr.GetResourceVersion(), "%s %s changed though its spec did not: status %v", k.kind, cr.GetName(), cr.Object["status"])
		}
	}), "later phases build on this one")

	require.True(t, t.Run("PRUNE=false strips the finalizers and leaves OpenStack alone", func(t *testing.T) {
		before, err := h.installedDeployment(ctx)
		require.NoError(t, err)
		set := []string{"upgrade", release, chartDir, "--namespace", h.namespace, "--reuse-values"}
		for _, key := range []string{"ironicRunbooks", "neutronRouterFlavors", "neutronSegmentRanges", "neutronSubnetPools"} {
			set = append(set, "--set", "pluginData."+key+".hook.env.PRUNE=false")
		}
		out, err := h.helm(set...)
		require.NoError(t, err, out)
		after, err := h.installedDeployment(ctx)
		require.NoError(t, err)
		const ann = "checksum/openstack-sync-operator-hooks"
		require.NotEqual(t, before.Spec.Template.Annotations[ann], after.Spec.Template.Annotations[ann],
			"a hook setting changed, so the pod template must change and the pod restart")

		// The bad-credentials range stays through the restart: it fails its hook's start-up
		// Synchronization, which shell-operator runs in its main queue before the Synchronization
		// of every hook after it, the subnet pools' among them. Had that run exited 1,
		// shell-operator would retry it there for ever and the subnet pools would never start
		// (Decision 20); the loop below waits for them. The other group's CRs go; with
		// PRUNE=false nothing holds their deletion.
		for _, k := range []kind{runbooks, routerFlavors, subnetPools} {
			h.delete(t, ctx, k, other[k.kind].GetName())
		}
		h.stopOperator()
		require.NoError(t, h.startOperator(ctx))
		defer h.delete(t, ctx, segmentRanges, bad.GetName())
		for _, k := range []kind{runbooks, routerFlavors, subnetPools} {
			name := other[k.kind].GetName()
			h.waitFor(t, syncWait, fmt.Sprintf("%s %s to be deleted", k.kind, name), func() (bool, string) {
				cr := h.getOrNil(t, ctx, k, name)
				if cr == nil {
					return true, ""
				}
				return false, fmt.Sprintf("still present, finalizers %v", cr.GetFinalizers())
			})
		}
		for _, k := range []kind{runbooks, routerFlavors, subnetPools} {
			name := b[k.kind].GetName()
			h.waitFor(t, syncWait, fmt.Sprintf("%s %s to lose the finalizer", k.kind, name), func() (bool, string) {
				cr := h.get(t, ctx, k, name)
				return !slices.Contains(cr.GetFinalizers(), finalizer), fmt.Sprintf("finalizers %v", cr.GetFinalizers())
			})
			h.waitSynced(t, ctx, k, name)
			h.delete(t, ctx, k, name)
			h.waitFor(t, 10*time.Second, fmt.Sprintf("%s %s to be deleted", k.kind, name), func() (bool, string) {
				return h.getOrNil(t, ctx, k, name) == nil, "still present"
			})
		}
		assert.Contains(t, h.operatorLog(), "The start-up Synchronization had failures; exiting 0",
			"the segment ranges' Synchronization failed on the bad credentials and let the other hooks start")
		assert.Equal(t, "Failed", readStatus(h.get(t, ctx, segmentRanges, bad.GetName())).syncStatus)
		rb, err := h.cloud.runbook(ctx, osName(b[runbooks.kind]))
		require.NoError(t, err)
		assert.NotNil(t, rb, "with PRUNE=false a deleted CR's runbook stays in Ironic")
		f, err := h.cloud.flavor(ctx, osName(b[routerFlavors.kind]))
		require.NoError(t, err)
		assert.NotNil(t, f, "with PRUNE=false a deleted CR's flavor stays in Neutron")
		p, err := h.cloud.subnetPool(ctx, e2eAdoptedPool)
		require.NoError(t, err)
		assert.NotNil(t, p, "with PRUNE=false a deleted CR's subnet pool stays in Neutron (cleanup policy NONE)")
		// Checked last, after more segment-range runs (the restart's Synchronization among them).
		r, err := h.cloud.segmentRange(ctx, osName(a[segmentRanges.kind]))
		require.NoError(t, err)
		assert.NotNil(t, r, "segment ranges are never deleted, even with PRUNE=true")
	}), "later phases build on this one")
}

// renamed copies a CR under a new metadata.name (suffix) and OpenStack name (field path + osSuffix).
func renamed(u *unstructured.Unstructured, suffix string, path ...string) *unstructured.Unstructured {
	field, osSuffix := path[:len(path)-1], path[len(path)-1]
	c := u.DeepCopy()
	c.SetName(u.GetName() + suffix)
	v, _, _ := unstructured.NestedString(c.Object, field...)
	_ = unstructured.SetNestedField(c.Object, v+osSuffix, field...)
	return c
}

// osNameField is the spec field holding a CR's OpenStack name.
func osNameField(k kind) []string {
	if k == runbooks {
		return []string{"spec", "runbookName"}
	}
	return []string{"spec", "name"}
}

// groupOf is the credential group a CR of the harness's namespace names, as the first-party
// plugins' markers record it (docs/migrating.md, "Credential groups in the markers").
func (h *harness) groupOf(u *unstructured.Unstructured) string {
	secret, _, _ := unstructured.NestedString(u.Object, "spec", "cloudCredentialsRef", "secretName")
	cloud, _, _ := unstructured.NestedString(u.Object, "spec", "cloudCredentialsRef", "cloudName")
	return h.namespace + "/" + secret + "/" + cloud
}

// groupFlavorMarker is the router flavor's marker for group.
func groupFlavorMarker(group string) string {
	return strings.TrimSuffix(flavorMarker, "]") + " group=" + group + "]"
}

// osName is the name a CR's resource has in OpenStack.
func osName(u *unstructured.Unstructured) string {
	if u.GetKind() == runbooks.kind {
		n, _, _ := unstructured.NestedString(u.Object, "spec", "runbookName")
		return n
	}
	n, _, _ := unstructured.NestedString(u.Object, "spec", "name")
	return n
}

// applySecrets creates the examples' credentials Secret pointing at the real cloud, and a copy
// with a wrong password.
func (h *harness) applySecrets(t *testing.T, ctx context.Context) {
	t.Helper()
	for name, password := range map[string]string{h.examples.secret.GetName(): "", badSecret: "not-the-password"} {
		body, err := secretCloudsYAML(h.env.CloudsYAML, h.examples.clouds, password)
		require.NoError(t, err)
		s := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": name, "namespace": h.namespace},
			"data":     map[string]any{"clouds.yaml": base64.StdEncoding.EncodeToString(body)},
		}}
		_, err = h.dyn.Resource(secretsGVR).Namespace(h.namespace).Create(ctx, s, metav1.CreateOptions{})
		require.NoError(t, err, "create Secret %s", name)
	}
}

func (h *harness) create(t *testing.T, ctx context.Context, k kind, u *unstructured.Unstructured) {
	t.Helper()
	c := u.DeepCopy()
	c.SetNamespace(h.namespace)
	c.SetResourceVersion("")
	_, err := h.dyn.Resource(k.gvr).Namespace(h.namespace).Create(ctx, c, metav1.CreateOptions{})
	require.NoError(t, err, "create %s %s", k.kind, c.GetName())
}

func (h *harness) getOrNil(t *testing.T, ctx context.Context, k kind, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := h.dyn.Resource(k.gvr).Namespace(h.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return u
}

func (h *harness) get(t *testing.T, ctx context.Context, k kind, name string) *unstructured.Unstructured {
	t.Helper()
	u := h.getOrNil(t, ctx, k, name)
	require.NotNil(t, u, "%s %s not found", k.kind, name)
	return u
}

func (h *harness) edit(t *testing.T, ctx context.Context, k kind, name string, change func(*unstructured.Unstructured)) {
	t.Helper()
	u := h.get(t, ctx, k, name)
	change(u)
	_, err := h.dyn.Resource(k.gvr).Namespace(h.namespace).Update(ctx, u, metav1.UpdateOptions{})
	require.NoError(t, err, "update %s %s", k.kind, name)
}

func (h *harness) delete(t *testing.T, ctx context.Context, k kind, name string) {
	t.Helper()
	require.NoError(t, h.dyn.Resource(k.gvr).Namespace(h.namespace).Delete(ctx, name, metav1.DeleteOptions{}), "delete %s %s", k.kind, name)
}

// crStatus is the part of a CR's status the framework writes.
type crStatus struct {
	syncStatus, message string
	observed            int64
	ready               map[string]any
}

func readStatus(u *unstructured.Unstructured) crStatus {
	var s crStatus
	s.syncStatus, _, _ = unstructured.NestedString(u.Object, "status", "syncStatus")
	s.message, _, _ = unstructured.NestedString(u.Object, "status", "message")
	s.observed, _, _ = unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			s.ready = m
		}
	}
	return s
}

// waitStatus waits until the CR's status reports want for its current generation.
func (h *harness) waitStatus(t *testing.T, ctx context.Context, k kind, name, want string) crStatus {
	t.Helper()
	var st crStatus
	h.waitFor(t, syncWait, fmt.Sprintf("%s %s to be %s", k.kind, name, want), func() (bool, string) {
		u := h.get(t, ctx, k, name)
		st = readStatus(u)
		ok := st.syncStatus == want && st.observed == u.GetGeneration() && st.ready != nil &&
			fmt.Sprint(st.ready["observedGeneration"]) == fmt.Sprint(u.GetGeneration())
		return ok, fmt.Sprintf("generation %d, status %v", u.GetGeneration(), u.Object["status"])
	})
	return st
}

// waitSynced waits for Synced and checks the Ready condition that goes with it.
func (h *harness) waitSynced(t *testing.T, ctx context.Context, k kind, name string) {
	t.Helper()
	st := h.waitStatus(t, ctx, k, name, "Synced")
	assert.Equal(t, "True", st.ready["status"], "%s %s Ready condition", k.kind, name)
	assert.Equal(t, "Reconciled", st.ready["reason"], "%s %s Ready reason", k.kind, name)
	assert.True(t, strings.HasPrefix(st.message, "Successfully reconciled"), "%s %s message %q", k.kind, name, st.message)
}

// waitFor polls cond every half second until it holds or timeout passes; the failure names what
// was awaited and the last state seen.
// A shell-operator that exited fails the wait at once.
func (h *harness) waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if h.operatorExited() {
			t.Fatalf("shell-operator exited while waiting for %s; last seen: %s", what, last)
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last seen: %s", timeout, what, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
