package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/canon"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/invalidspec"
)

const runbooksPath = "v1/runbooks"

// Spec is IronicRunbook.spec without cloudCredentialsRef.
type Spec struct {
	RunbookName    string         `json:"runbookName"`
	Description    string         `json:"description"`
	Traits         []string       `json:"traits"`
	Steps          []any          `json:"steps"`
	DisableRamdisk bool           `json:"disableRamdisk"`
	Public         bool           `json:"public"`
	Owner          string         `json:"owner"`
	Extra          map[string]any `json:"extra"`
}

// step is one runbook step in the form Ironic stores it.
type step struct {
	Interface string         `json:"interface"`
	Step      string         `json:"step"`
	Args      map[string]any `json:"args"`
	Order     int64          `json:"order"`
}

// runbook is the part of an Ironic runbook the plugin reads.
type runbook struct {
	UUID           string         `json:"uuid"`
	Name           string         `json:"name"`
	Steps          []step         `json:"steps"`
	DisableRamdisk bool           `json:"disable_ramdisk"`
	Public         bool           `json:"public"`
	Owner          *string        `json:"owner"`
	Extra          map[string]any `json:"extra"`
	Description    *string        `json:"description"`
	Traits         []string       `json:"traits"`
}

func (r runbook) owner() string {
	if r.Owner == nil {
		return ""
	}
	return *r.Owner
}

func (r runbook) description() string {
	if r.Description == nil {
		return ""
	}
	return *r.Description
}

// isTraitName reports whether name is the only runbook name Ironic accepts below traitsVersion:
// CUSTOM_ then one or more of A-Z, 0-9 and _. Not a regexp: the package made a fifth of the
// module's code for this one pattern, and the host validates and loads all of it every run.
func isTraitName(name string) bool {
	rest, ok := strings.CutPrefix(name, "CUSTOM_")
	if !ok || rest == "" {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

var validInterfaces = []string{"bios", "deploy", "firmware", "management", "power", "raid", "vendor"}

// desiredSteps validates spec.steps and returns them as Ironic will store them. Orders arrive as
// numbers or numeric strings ("3") because the CRD keeps args free-form and older CRs may carry
// strings; anything else is refused naming the step.
func (s Spec) desiredSteps() ([]step, error) {
	if len(s.Steps) == 0 {
		return nil, invalidspec.Errorf("spec.steps must list at least one step")
	}
	out := make([]step, 0, len(s.Steps))
	for i, raw := range s.Steps {
		obj, ok := raw.(map[string]any)
		if !ok {
			return nil, invalidspec.Errorf("spec.steps[%d] must be an object", i)
		}
		for _, k := range []string{"interface", "step", "order"} {
			if obj[k] == nil {
				return nil, invalidspec.Errorf("spec.steps[%d].%s must be set", i, k)
			}
		}
		iface, ok1 := obj["interface"].(string)
		name, ok2 := obj["step"].(string)
		if !ok1 || !ok2 || name == "" {
			return nil, invalidspec.Errorf("spec.steps[%d]: interface and step must be non-empty strings", i)
		}
		if !slices.Contains(validInterfaces, iface) {
			return nil, invalidspec.Errorf("spec.steps[%d].interface must be one of %s; got %q", i, strings.Join(validInterfaces, ", "), iface)
		}
		order, err := toOrder(obj["order"])
		if err != nil {
			return nil, invalidspec.Errorf("spec.steps[%d].order %v", i, err)
		}
		args := map[string]any{}
		if a, ok := obj["args"]; ok && a != nil {
			if args, ok = a.(map[string]any); !ok {
				return nil, invalidspec.Errorf("spec.steps[%d].args must be an object", i)
			}
		}
		out = append(out, step{Interface: iface, Step: name, Args: args, Order: order})
	}
	return out, nil
}

func toOrder(v any) (int64, error) {
	switch t := v.(type) {
	case float64:
		if t != float64(int64(t)) || t < 0 {
			return 0, fmt.Errorf("must be a whole number >= 0; got %v", t)
		}
		return int64(t), nil
	case json.Number:
		n, err := t.Int64()
		if err != nil || n < 0 {
			return 0, fmt.Errorf("must be a whole number >= 0; got %v", t)
		}
		return n, nil
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("must be a whole number >= 0; got %q", t)
		}
		return n, nil
	}
	return 0, fmt.Errorf("must be a whole number >= 0; got %v", v)
}

// check is every rule of the spec that needs nothing from Ironic.
func (s Spec) check() error {
	if err := s.validate(); err != nil {
		return err
	}
	_, err := s.desiredSteps()
	return err
}

func (s Spec) validate() error {
	if s.RunbookName == "" {
		return invalidspec.Errorf("spec.runbookName must be set")
	}
	if s.Public && s.Owner != "" {
		return invalidspec.Errorf("spec.public and spec.owner are both set, but Ironic forbids an owner on a public runbook; set one of them")
	}
	return nil
}

// desiredExtra is spec.extra with the ownership marker m laid over it (markers.go): the marker
// always wins, so a spec cannot disown its runbook by accident.
func (s Spec) desiredExtra(m markerSet) map[string]any {
	out := maps.Clone(s.Extra)
	if out == nil {
		out = map[string]any{}
	}
	maps.Copy(out, m.keys())
	return out
}

// sameSteps reports whether a and b hold the same steps in any list order: Ironic runs steps by
// their order field, not by list position, so a reordered list is no change. Steps are compared
// field by field and their args as JSON values (a missing args is {}), without encoding anything:
// this runs for every converged runbook.
func sameSteps(a, b []step) bool {
	if len(a) != len(b) {
		return false
	}
	used := make([]bool, len(b))
	for _, x := range a {
		found := false
		for j, y := range b {
			if !used[j] && x.Interface == y.Interface && x.Step == y.Step && x.Order == y.Order &&
				canon.Equal(argsOrEmpty(x.Args), argsOrEmpty(y.Args)) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func argsOrEmpty(args map[string]any) map[string]any {
	if args == nil {
		return map[string]any{}
	}
	return args
}

// api is the Ironic endpoint at the microversion chosen for the group.
type api struct {
	svc *pdk.ServiceClient
	ver pdk.APIVersion
	// own is the hook's profile's view of ownership markers (markers.go).
	own ownership
	// known is what the group has read of Ironic's runbooks (nil: read each one by GET).
	known *catalog
}

// defaultListAfter is the number of runbooks a credential group reads one GET at a time before it
// lists them all instead: a small group costs one GET per CR, as the original; a larger one costs
// that many GETs and then one paginated list (a page per 100 runbooks Ironic shows) for all the
// rest. <PREFIX>_LIST_AFTER overrides it (-1: never list). Chosen from measurements,
// docs/plugins/ironic-runbooks.md "Requests".
const defaultListAfter = 8

// catalog is what one credential group has read of Ironic's runbooks: how many it read by GET,
// then (once it listed them) every runbook by name, kept current by the group's own writes.
//
// The listed runbooks are kept as the JSON Ironic sent, one slice per runbook, and a runbook is
// decoded only when its CR looks it up: 5,000 decoded runbooks (maps of steps, args and extra)
// did not fit the guest's default 32 MiB beside the work of the pass (docs/benchmarks.md,
// "Guest-side fixes"), while their text is about 1–2 KB each. That JSON is also the evidence the
// host's convergence memo is given (reconcileCR). The JSON kept is bounded (keepBytes): past it,
// a listed runbook keeps only a digest of its JSON, which serves as the memo's evidence, and a
// CR whose memo misses reads its runbook by GET. 20,000 site-shaped runbooks are about 40 MB of
// JSON (docs/scaling.md).
type catalog struct {
	// listAfter is the GETs before a list; negative never lists.
	listAfter int
	gets      int
	// keepBytes bounds the JSON the catalog keeps, listed and written together; kept is how much
	// it keeps now.
	keepBytes, kept int
	// listed is every listed runbook by name; nil until the group listed.
	listed map[string]listedRunbook
	// written is what the group's own writes left in Ironic, which wins over listed; as JSON like
	// the listed ones: a group that created 5,000 site-sized runbooks (steps with arguments) ran
	// out of its 32 MiB holding them decoded (docs/benchmarks.md, "What the site CRs hold"). A
	// write past keepBytes forgets the runbook instead, so the next CR naming it reads it by GET.
	written map[string]json.RawMessage
	// listFailed keeps a group whose list failed (a policy that allows GET but not list) on GETs.
	listFailed bool
	// fetched is the runbook the current CR read by GET (its JSON, nil when Ironic has none), so
	// the memo's check and the reconcile after it share one read.
	fetched *fetchedRunbook
}

// listedRunbook is one runbook as the group's list returned it.
type listedRunbook struct {
	// raw is the runbook's JSON; nil when the catalog had kept keepBytes of JSON already, and
	// then sum, the digest of that JSON, stands for it.
	raw json.RawMessage
	sum [digestSize]byte
	// digested says sum stands for raw.
	digested bool
	// traits says the JSON has a traits member: a list at a version that reports traits may
	// still leave them out, and then the runbook is read by GET.
	traits bool
}

type fetchedRunbook struct {
	name string
	raw  []byte
}

func (a api) traitsSupported() bool { return !a.ver.Less(traitsVersion) }

func runbookPath(id string) string { return runbooksPath + "/" + url.PathEscape(id) }

// getRaw returns the JSON of the runbook named name, or nil when Ironic has none.
func (a api) getRaw(name string) ([]byte, error) {
	var raw json.RawMessage
	err := a.svc.Get(runbookPath(name), nil, &raw)
	if pdk.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read runbook %q: %w", name, err)
	}
	return raw, nil
}

// source finds what Ironic holds for the runbook named name, exactly as the reconcile will compare
// with it: what a write of this group left (wrote), else the JSON of the group's list, else of a
// GET (raw nil: Ironic has none; got says it was a GET). A runbook missing from the list, or
// listed without the traits this version reports, is read by GET: a create never rests on a list
// read earlier in the run. A GET the memo's check just made (catalog.fetched) is used once instead
// of a second request.
func (a api) source(name string) (raw []byte, wrote, got bool, err error) {
	c := a.known
	if c == nil {
		raw, err = a.getRaw(name)
		return raw, false, true, err
	}
	f := c.fetched
	c.fetched = nil
	if w, ok := c.written[name]; ok {
		return w, true, false, nil
	}
	if f != nil && f.name == name {
		return f.raw, false, true, nil
	}
	a.listOnce()
	if l, ok := c.listed[name]; ok && l.raw != nil && (l.traits || !a.traitsSupported()) {
		return l.raw, false, false, nil
	}
	c.gets++
	raw, err = a.getRaw(name)
	return raw, false, true, err
}

// listOnce lists every runbook into the catalog once the group has read listAfter by GET.
func (a api) listOnce() {
	c := a.known
	if c.listed == nil && !c.listFailed && c.listAfter >= 0 && c.gets >= c.listAfter {
		if err := a.listRaw(); err != nil {
			c.listed, c.kept, c.listFailed = nil, 0, true
		}
	}
}

// listedDigest is the digest standing for a listed runbook whose JSON the catalog did not keep
// (nil for any other runbook): the memo's evidence for it, checked without a read; a miss reads
// the runbook by GET for the reconcile.
func (a api) listedDigest(name string) []byte {
	c := a.known
	if c == nil {
		return nil
	}
	if _, ok := c.written[name]; ok {
		return nil
	}
	if f := c.fetched; f != nil && f.name == name {
		return nil
	}
	a.listOnce()
	if l, ok := c.listed[name]; ok && l.digested && (l.traits || !a.traitsSupported()) {
		return l.sum[:]
	}
	return nil
}

// heldEvidence is the memo's evidence for the runbook named name that the group's list holds
// (its JSON, or the digest standing for it), exactly as unchanged would give it, when giving it
// needs no request and no GET of this CR is pending; nil otherwise.
func (a api) heldEvidence(name string) []byte {
	c := a.known
	if c == nil || c.listed == nil || c.fetched != nil {
		return nil
	}
	if _, ok := c.written[name]; ok {
		return nil
	}
	l, ok := c.listed[name]
	switch {
	case !ok || !(l.traits || !a.traitsSupported()):
		return nil
	case l.digested:
		return l.sum[:]
	}
	return l.raw
}

// lookup returns the runbook named name as the group knows it, or nil when Ironic has none.
func (a api) lookup(name string) (*runbook, error) {
	raw, _, _, err := a.source(name)
	if err != nil || raw == nil {
		return nil, err
	}
	var rb runbook
	if err := experimental.DecodeJSON(raw, &rb); err != nil {
		return nil, fmt.Errorf("decode runbook %q: %w", name, err)
	}
	return &rb, nil
}

// remember records what Ironic holds for rb after this CR's writes. Should it not encode, the
// runbook is forgotten instead, and read again by GET if another CR names it.
func (a api) remember(rb *runbook) {
	c := a.known
	if c == nil || c.listed == nil || rb == nil {
		return
	}
	// What the list said of it is superseded either way.
	c.kept -= len(c.listed[rb.Name].raw) + len(c.written[rb.Name])
	delete(c.listed, rb.Name)
	delete(c.written, rb.Name)
	raw, err := json.Marshal(rb)
	if err != nil || c.kept+len(raw) > c.keepBytes {
		return
	}
	if c.written == nil {
		c.written = map[string]json.RawMessage{}
	}
	c.written[rb.Name] = raw
	c.kept += len(raw)
}

// reconcile converges one runbook and returns its notes.
func reconcile(a api, s Spec) ([]string, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	steps, err := s.desiredSteps()
	if err != nil {
		return nil, err
	}
	if !a.traitsSupported() && !isTraitName(s.RunbookName) {
		return nil, invalidspec.Errorf("spec.runbookName %q must be a trait name (CUSTOM_ then A-Z, 0-9 or _) because Ironic offers API %s; "+
			"other names need %s", s.RunbookName, a.ver, traitsVersion)
	}
	var notes []string
	cur, err := a.lookup(s.RunbookName)
	if err != nil {
		return nil, err
	}
	if err := foreign(a.own, cur); err != nil {
		return nil, err
	}
	// wrote says this CR changed the runbook, so the group must remember what Ironic now holds;
	// a converged runbook stays in the catalog as listed (decoding every one would undo it).
	wrote := cur == nil
	if cur == nil {
		cur, err = a.create(s, steps)
	} else {
		if cur.DisableRamdisk != s.DisableRamdisk {
			// Ironic does not accept disable_ramdisk in a runbook patch: drift it will not let
			// us fix is a note, not a failure.
			notes = append(notes, fmt.Sprintf("disable_ramdisk: have=%v want=%v; Ironic cannot change it on an existing runbook, "+
				"delete runbook %s in Ironic to have it recreated", cur.DisableRamdisk, s.DisableRamdisk, s.RunbookName))
		}
		wrote, err = a.update(cur, s, steps)
	}
	if err != nil {
		return nil, err
	}
	if a.traitsSupported() {
		set, err := a.syncTraits(cur, s)
		if err != nil {
			return nil, err
		}
		wrote = wrote || set
	} else {
		notes = versionNotes(notes, a.ver, s.Traits, s.Description != "")
	}
	if wrote {
		a.remember(cur)
	}
	// cur is now what Ironic holds after the writes (their answers): a runbook created without
	// an owner by project-scoped credentials is owned by that project, which only Ironic knows.
	if !cur.Public && cur.owner() == "" {
		notes = append(notes, "the runbook is neither public nor owned, so no project can see it and no project-scoped token can use it; "+
			"set spec.owner to a project id or spec.public to true")
	}
	return notes, nil
}

// versionNotes appends the notes of a spec whose traits or description Ironic at ver (older than
// traitsVersion) cannot apply: both paths of a converged CR give them (quick.go).
func versionNotes(notes []string, ver pdk.APIVersion, traits []string, description bool) []string {
	if len(traits) > 0 {
		notes = append(notes, "traits "+strings.Join(sortedCopy(traits), ", ")+" are not applied: Ironic offers API "+ver.String()+
			" and runbook traits need "+traitsVersion.String())
	}
	if description {
		notes = append(notes, "description is not applied: Ironic offers API "+ver.String()+" and runbook descriptions need "+
			traitsVersion.String())
	}
	return notes
}

func (a api) create(s Spec, steps []step) (*runbook, error) {
	body := map[string]any{
		"name":            s.RunbookName,
		"steps":           steps,
		"public":          s.Public,
		"disable_ramdisk": s.DisableRamdisk,
		"extra":           s.desiredExtra(a.own.Own),
		"owner":           nil,
	}
	if s.Owner != "" {
		body["owner"] = s.Owner
	}
	if s.Description != "" && a.traitsSupported() {
		body["description"] = s.Description
	}
	var rb runbook
	if err := a.svc.Post(runbooksPath, body, &rb); err != nil {
		switch {
		case pdk.IsConflict(err):
			// The GET said absent, so the runbook exists where these credentials cannot see it.
			return nil, fmt.Errorf("create runbook %q: a runbook of that name exists but is not visible to these credentials "+
				"(owned by another project and not public); use system-scoped credentials (system_scope: all) or set "+
				"spec.owner to the credentials' project: %w", s.RunbookName, err)
		case s.Public && pdk.StatusCode(err) == pdk.StatusForbidden:
			return nil, fmt.Errorf("create runbook %q: only a system-scoped token may create a public runbook; "+
				"use credentials with system_scope: all: %w", s.RunbookName, err)
		}
		return nil, fmt.Errorf("create runbook %q: %w", s.RunbookName, err)
	}
	if rb.UUID == "" {
		return nil, fmt.Errorf("create runbook %q: Ironic answered without a uuid", s.RunbookName)
	}
	return &rb, nil
}

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// patchFor is the JSON patch that turns cur into the spec, using only "add" (which replaces an
// existing member), so it applies whether Ironic stored the member or not. An unowned runbook is
// adopted by the same patch: its extra gains the marker.
func patchFor(cur *runbook, s Spec, steps []step, withDescription bool, m markerSet) []patchOp {
	var ops []patchOp
	add := func(path string, v any) { ops = append(ops, patchOp{Op: "add", Path: path, Value: v}) }
	if !sameSteps(cur.Steps, steps) {
		add("/steps", steps)
	}
	if extra := s.desiredExtra(m); !canon.Equal(cur.Extra, extra) {
		add("/extra", extra)
	}
	if cur.Public != s.Public {
		add("/public", s.Public)
	}
	if withDescription && cur.description() != s.Description {
		add("/description", s.Description)
	}
	// An unset spec owner leaves Ironic's value alone; making a runbook public drops its owner
	// on the server, so nothing is sent for that either.
	if s.Owner != "" && cur.owner() != s.Owner {
		add("/owner", s.Owner)
	}
	return ops
}

// update patches cur into the spec and reports whether it sent a patch.
func (a api) update(cur *runbook, s Spec, steps []step) (bool, error) {
	ops := patchFor(cur, s, steps, a.traitsSupported(), a.own.Own)
	if len(ops) == 0 {
		return false, nil
	}
	if cur.UUID == "" {
		return false, fmt.Errorf("runbook %q came back without a uuid, so it cannot be updated", s.RunbookName)
	}
	var rb runbook
	if err := a.svc.Patch(runbookPath(cur.UUID), ops, &rb); err != nil {
		if s.Public && !cur.Public && pdk.StatusCode(err) == pdk.StatusForbidden {
			return false, fmt.Errorf("update runbook %q (%s): only a system-scoped token may make a runbook public; "+
				"use credentials with system_scope: all: %w", s.RunbookName, cur.UUID, err)
		}
		return false, fmt.Errorf("update runbook %q (%s): %w", s.RunbookName, cur.UUID, err)
	}
	if rb.UUID != "" {
		rb.Traits = cur.Traits
		*cur = rb
		return true, nil
	}
	// An answer without the runbook: what Ironic holds is what the patch asked for.
	applyPatch(cur, s, steps, ops, a.own.Own)
	return true, nil
}

// applyPatch makes cur what Ironic holds after ops succeeded, for a PATCH answered without the
// runbook. Making a runbook public drops its owner on the server.
func applyPatch(cur *runbook, s Spec, steps []step, ops []patchOp, m markerSet) {
	for _, op := range ops {
		switch op.Path {
		case "/steps":
			cur.Steps = steps
		case "/extra":
			cur.Extra = s.desiredExtra(m)
		case "/public":
			cur.Public = s.Public
		case "/description":
			d := s.Description
			cur.Description = &d
		case "/owner":
			o := s.Owner
			cur.Owner = &o
		}
	}
	if cur.Public {
		cur.Owner = nil
	}
}

// syncTraits replaces the runbook's trait set in one request when it differs, and reports whether
// it did.
func (a api) syncTraits(cur *runbook, s Spec) (bool, error) {
	want := sortedCopy(s.Traits)
	if slices.Equal(sortedCopy(cur.Traits), want) {
		return false, nil
	}
	if cur.UUID == "" {
		return false, fmt.Errorf("runbook %q came back without a uuid, so its traits cannot be set", s.RunbookName)
	}
	if want == nil {
		want = []string{}
	}
	if err := a.svc.Put(runbookPath(cur.UUID)+"/traits", map[string]any{"traits": want}, nil); err != nil {
		return false, fmt.Errorf("set traits of runbook %q (%s): %w", s.RunbookName, cur.UUID, err)
	}
	cur.Traits = want
	return true, nil
}

func sortedCopy(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
