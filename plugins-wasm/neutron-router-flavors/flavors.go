package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental"
	"github.com/openstack-sync/openstack-sync/pdk/lifecycle"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/canon"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/intern"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/invalidspec"
)

const (
	flavorsPath  = "v2.0/flavors"
	profilesPath = "v2.0/service_profiles"
	routersPath  = "v2.0/routers"
	l3Service    = "L3_ROUTER_NAT"
)

// Spec is NeutronRouterFlavor.spec without cloudCredentialsRef.
type Spec struct {
	Name            string        `json:"name"`
	ServiceType     string        `json:"service_type"`
	IsEnabled       *bool         `json:"is_enabled"`
	Description     string        `json:"description"`
	ServiceProfiles []ProfileSpec `json:"service_profiles"`

	lifecycle.SharedFields[ImportFilter]
}

// ProfileSpec is one entry of spec.service_profiles.
type ProfileSpec struct {
	Driver      string         `json:"driver"`
	Description string         `json:"description"`
	IsEnabled   *bool          `json:"is_enabled"`
	MetaInfo    map[string]any `json:"meta_info"`
}

func enabled(b *bool) bool { return b == nil || *b }

func (s Spec) serviceType() string {
	if s.ServiceType == "" {
		return l3Service
	}
	return s.ServiceType
}

// namePattern is what validName accepts, for the error message.
const namePattern = `^[A-Za-z0-9._-]+$`

// validName reports whether name matches namePattern. Not a regexp: regexp and regexp/syntax were
// a tenth of the module's code for two patterns, and the host validates and loads all of it every
// run (TestNamesAndDriversMatchThePatterns holds both to the patterns). Text or bytes: the quick
// check (quick.go) reads a spec's names in place.
func validName[T string | []byte](name T) bool {
	if len(name) == 0 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !identChar(c) && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// validDriver reports whether driver is a dotted Python path of at least two identifiers:
// ^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$.
func validDriver[T string | []byte](driver T) bool {
	parts, start := 1, true
	for i := 0; i < len(driver); i++ {
		switch c := driver[i]; {
		case c == '.':
			if start {
				return false
			}
			parts, start = parts+1, true
		case start && c >= '0' && c <= '9', !identChar(c):
			return false
		default:
			start = false
		}
	}
	return parts >= 2 && !start
}

func identChar(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'
}

func (s Spec) validate() error {
	var errs []string
	if !validName(s.Name) || len(s.Name) > 255 {
		errs = append(errs, fmt.Sprintf("spec.name must match %s and be at most 255 characters; got %q", namePattern, s.Name))
	}
	if s.serviceType() != l3Service {
		errs = append(errs, fmt.Sprintf("spec.service_type must be %s; got %q", l3Service, s.ServiceType))
	}
	if len(s.ServiceProfiles) == 0 {
		errs = append(errs, "spec.service_profiles must list at least one profile")
	}
	for i, p := range s.ServiceProfiles {
		if !validDriver(p.Driver) {
			errs = append(errs, fmt.Sprintf("spec.service_profiles[%d].driver must be a dotted Python path; got %q", i, p.Driver))
		}
		for _, k := range allMarkerKeys {
			if _, ok := p.MetaInfo[k]; ok {
				errs = append(errs, fmt.Sprintf("spec.service_profiles[%d].meta_info must not set the ownership key %q", i, k))
			}
		}
		if va, ok := p.MetaInfo["vni_alloc"]; ok && va != "off" && va != "on" && va != "auto" {
			errs = append(errs, fmt.Sprintf("spec.service_profiles[%d].meta_info.vni_alloc must be off, on or auto; got %v", i, va))
		}
	}
	if len(errs) > 0 {
		return invalidspec.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// profile is a Neutron service profile. Metainfo is JSON text on the wire.
type profile struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	Driver      string `json:"driver"`
	Enabled     bool   `json:"enabled"`
	// Metainfo is empty in the group's view (state.keep), which holds meta instead: read a
	// profile's metainfo through state.metaOf.
	Metainfo string `json:"metainfo"`
	// meta is what Metainfo says, parsed when the profile joined the group's view.
	meta profileMeta
}

// metaInfo parses the profile's metainfo; text that is not a JSON object reads as empty, which
// also makes the profile unowned (markers.go).
func (p profile) metaInfo() map[string]any {
	var m map[string]any
	if experimental.DecodeJSON([]byte(p.Metainfo), &m) != nil || m == nil {
		return map[string]any{}
	}
	return m
}

// flavor is a Neutron flavor.
type flavor struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	ServiceType     string   `json:"service_type"`
	Description     string   `json:"description"`
	Enabled         bool     `json:"enabled"`
	ServiceProfiles []string `json:"service_profiles"`
}

// state is what one credential group knows of Neutron: every flavor and every service profile,
// each read by one paginated list the first time a CR needs it and kept current by the plugin's
// own writes. A converged group therefore costs two lists however many CRs it has.
type state struct {
	svc *pdk.ServiceClient
	// own is the hook's profile's view of ownership markers (markers.go).
	own      ownership
	flavors  []flavor
	profiles []profile
	loaded   bool
	// keepText keeps each profile's metainfo text beside what it says (a re-mark rewrites the
	// text); the reconciles' view drops it (keep).
	keepText bool
	// changed is set once the group's view differs from what the lists returned (a write, a flavor
	// read by GET); sum is the digest of the listed view, for the convergence memo.
	changed bool
	sum     []byte
	// idx finds entries of the view without scanning it (index.go); nil until first used.
	idx *viewIndex
}

// digest is the FNV-128a of every listed flavor and profile, in the order Neutron listed them (a
// spec entry takes the first matching profile), each field length-prefixed: the evidence of
// every CR of the group.
//
// Not sha256: crypto/sha256 brings Go's FIPS module into the plugin (about 150 KB of its 4.5 MB),
// and every byte of the module is compiled code, a decoded copy and a mapping in each hook
// process, about 1 MiB of its peak RSS (docs/benchmarks.md). A crafted collision needs write
// access to flavors and service profiles, which Neutron gives only to admins, and could at worst
// replay a write-free verdict until the memo's maximum age; an accidental one, at 128 bits, is
// negligible.
func (st *state) digest() []byte {
	if st.sum == nil {
		st.sum = digestOf(st.flavors, st.profiles)
	}
	return st.sum
}

// digestOf is the digest of listed flavors and profiles, their metainfo texts included: load
// takes it before keep drops the texts.
func digestOf(flavors []flavor, profiles []profile) []byte {
	h := fnv.New128a()
	var b []byte
	text := func(s string) {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(append(b, ':'), s...)
	}
	for _, f := range flavors {
		b = append(b[:0], 'f')
		text(f.ID)
		text(f.Name)
		text(f.ServiceType)
		text(f.Description)
		b = strconv.AppendBool(b, f.Enabled)
		b = strconv.AppendInt(b, int64(len(f.ServiceProfiles)), 10)
		for _, p := range f.ServiceProfiles {
			text(p)
		}
		h.Write(b)
	}
	for _, p := range profiles {
		b = append(b[:0], 'p')
		text(p.ID)
		text(p.Description)
		text(p.Driver)
		b = strconv.AppendBool(b, p.Enabled)
		text(p.Metainfo)
		h.Write(b)
	}
	return h.Sum(nil)
}

// profileMeta is what a profile's metainfo text says: its metainfo without any profile's marker
// as canonical JSON ("" if unreadable), whether it carries the hook's profile's marker, and
// whether it carries only the other profile's. parsed tells a profile's meta from the zero value.
type profileMeta struct {
	user                               string
	owned, foreign, otherGroup, parsed bool
}

// metaOf returns what the profile's metainfo says: as parsed when it joined the group's view
// (keep) and the text was dropped, else parsed now from the text, which a write may have changed. Each profile's text is parsed once per group: matching a group of N
// flavors against M profiles would otherwise parse M JSON texts per profile spec.
func (st *state) metaOf(p profile) profileMeta {
	if p.meta.parsed && p.Metainfo == "" {
		return p.meta
	}
	if pm, ok := quickMeta(p.Metainfo, st.own); ok {
		return pm
	}
	return metaOfText(p, st.own)
}

// metaOfText is metaOf by decoding the metainfo text: quickMeta's full path.
func metaOfText(p profile, own ownership) profileMeta {
	m := p.metaInfo()
	owned := own.Own.ownsMeta(m)
	// Another group's profile is neither this group's nor free to adopt: it is passed over.
	otherGroup := !owned && own.Own.markedMeta(m)
	foreign := !owned && !otherGroup && own.Other.markedMeta(m)
	for _, k := range allMarkerKeys {
		delete(m, k)
	}
	user, err := canon.JSON(m)
	if err != nil {
		user = ""
	}
	return profileMeta{user: user, owned: owned, foreign: foreign, otherGroup: otherGroup, parsed: true}
}

// keep is p as the group's view holds it: its metainfo parsed in place of the text (unless
// keepText), its strings shared through names (nil: as they are). A site's 20,000 profiles repeat
// one driver and a few metainfo values; their texts and copies did not fit the guest's 32 MiB
// beside the flavors (docs/scaling.md).
func (st *state) keep(p profile, names intern.Table) profile {
	p.meta = st.metaOf(p)
	if !st.keepText {
		p.Metainfo = ""
	}
	if names != nil {
		p.Description, p.Driver, p.meta.user = names.Of(p.Description), names.Of(p.Driver), names.Of(p.meta.user)
	}
	return p
}

func newState(svc *pdk.ServiceClient, own ownership) *state { return &state{svc: svc, own: own} }

func (st *state) load() error {
	if st.loaded {
		return nil
	}
	fl, err := listFlavors(st.svc)
	if err != nil {
		return err
	}
	pr, err := listProfiles(st.svc)
	if err != nil {
		return err
	}
	st.sum = digestOf(fl, pr)
	// The view keeps exact-length lists with shared strings: the lists grew page by page, to
	// up to twice their length, and every item had its own copy of each text.
	names := intern.Table{}
	st.flavors = make([]flavor, len(fl))
	for i, f := range fl {
		f.ServiceType, f.Description = names.Of(f.ServiceType), names.Of(f.Description)
		st.flavors[i] = f
	}
	st.profiles = make([]profile, len(pr))
	for i, p := range pr {
		st.profiles[i] = st.keep(p, names)
	}
	st.loaded = true
	st.idx = nil // anything indexed before the lists is gone with them
	return nil
}

func listFlavors(svc *pdk.ServiceClient) ([]flavor, error) {
	out, err := pdk.ListNeutron(svc, flavorsPath, "flavors", nil, func(f *flavor) string { return f.ID })
	if err != nil {
		return nil, fmt.Errorf("list flavors: %w", err)
	}
	return out, nil
}

func listProfiles(svc *pdk.ServiceClient) ([]profile, error) {
	out, err := pdk.ListNeutron(svc, profilesPath, "service_profiles", nil, func(p *profile) string { return p.ID })
	if err != nil {
		return nil, fmt.Errorf("list service profiles: %w", err)
	}
	return out, nil
}

func (st *state) putProfile(p profile) {
	p = st.keep(p, nil)
	ix := st.index()
	if i, ok := ix.profileAt[p.ID]; ok {
		old := st.profiles[i]
		if old == p {
			return
		}
		if ix.matching != nil {
			if k := st.matchKey(old); k != "" {
				ix.matching[k] = removeSorted(ix.matching[k], i)
			}
		}
		st.profiles[i], st.changed = p, true
		if ix.matching != nil {
			if k := st.matchKey(p); k != "" {
				ix.matching[k] = insertSorted(ix.matching[k], i)
			}
		}
		return
	}
	i := len(st.profiles)
	st.profiles, st.changed = append(st.profiles, p), true
	ix.profileAt[p.ID] = i
	if ix.matching != nil {
		if k := st.matchKey(p); k != "" {
			ix.matching[k] = append(ix.matching[k], i)
		}
	}
}

func (st *state) profile(id string) (profile, bool) {
	if i, ok := st.index().profileAt[id]; ok {
		return st.profiles[i], true
	}
	return profile{}, false
}

// bound reports whether any flavor of the group's view binds the profile.
func (st *state) bound(id string) bool { return st.index().boundBy[id] > 0 }

// flavor returns the view's flavor with the id.
func (st *state) flavor(id string) (flavor, bool) {
	if i, ok := st.index().flavorAt[id]; ok {
		return st.flavors[i], true
	}
	return flavor{}, false
}

// named returns the view's flavors with the name, in the order Neutron listed them.
func (st *state) named(name string) []flavor {
	var out []flavor
	for _, i := range st.index().named[name] {
		out = append(out, st.flavors[i])
	}
	return out
}

func (st *state) putFlavor(f flavor) {
	ix := st.index()
	if i, ok := ix.flavorAt[f.ID]; ok {
		if !sameFlavor(st.flavors[i], f) {
			ix.removeFlavor(i, st.flavors[i])
			st.flavors[i], st.changed = f, true
			ix.addFlavor(i, f)
		}
		return
	}
	st.flavors, st.changed = append(st.flavors, f), true
	ix.addFlavor(len(st.flavors)-1, f)
}

func sameFlavor(a, b flavor) bool {
	return a.ID == b.ID && a.Name == b.Name && a.ServiceType == b.ServiceType && a.Description == b.Description &&
		a.Enabled == b.Enabled && slices.Equal(a.ServiceProfiles, b.ServiceProfiles)
}

// logf receives what the plugin wants an operator to see in the hook log.
type logf func(format string, args ...any)

// reconcile converges one managed router flavor without a recorded status.id, as every CR did
// before the lifecycle, and returns its notes.
func reconcile(st *state, s Spec, log logf) ([]string, error) {
	c := &flavorCR{spec: s, st: st, log: log}
	out := driver.Reconcile(context.Background(), c)
	if out.Progress.IsDone() {
		return c.notes, nil
	}
	if err := out.Progress.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New(out.Progress.Message())
}

// ensureProfiles finds or makes every profile the spec lists, once per CR and run, and records
// the profile ids to bind and the notes.
func (c *flavorCR) ensureProfiles() error {
	if c.profilesDone {
		return c.profilesErr
	}
	c.profilesDone = true
	var want []string
	for i, ps := range c.spec.ServiceProfiles {
		p, pnotes, err := c.st.ensureProfile(ps, want)
		if err != nil {
			c.profilesErr = fmt.Errorf("service_profiles[%d] (driver %s): %w", i, ps.Driver, err)
			return c.profilesErr
		}
		for _, n := range pnotes {
			c.log("router flavor %s: %s", c.spec.Name, n)
		}
		c.notes = append(c.notes, pnotes...)
		want = append(want, p.ID)
	}
	c.want = want
	return nil
}

// ensureProfile finds or makes the profile a spec entry describes. A profile matches on driver and
// meta_info (markers aside); an owned match is preferred, an unowned one is adopted. Profiles
// already picked for this flavor are skipped, so two identical entries get two profiles.
func (st *state) ensureProfile(ps ProfileSpec, taken []string) (profile, []string, error) {
	want, err := canon.JSON(orEmpty(ps.MetaInfo))
	if err != nil {
		return profile{}, nil, fmt.Errorf("meta_info is not JSON: %w", err)
	}
	var ownedMatch, unownedMatch, foreignMatch *profile
	for _, i := range st.matching(ps.Driver, want) {
		p := st.profiles[i]
		if slices.Contains(taken, p.ID) {
			continue
		}
		pm := st.metaOf(p)
		switch {
		case pm.owned && ownedMatch == nil:
			ownedMatch = &st.profiles[i]
		case pm.foreign && foreignMatch == nil:
			foreignMatch = &st.profiles[i]
		case !pm.owned && !pm.foreign && !pm.otherGroup && unownedMatch == nil:
			unownedMatch = &st.profiles[i]
		}
	}
	if ownedMatch == nil && foreignMatch != nil {
		// Adopting it would strip the marker the other profile's operator, or a move under way,
		// depends on; making another would leave the flavor two profiles for one entry.
		return profile{}, nil, foreignProfile(st.own, *foreignMatch)
	}
	metainfo, err := st.own.Own.markedMetainfo(ps.MetaInfo)
	if err != nil {
		return profile{}, nil, err
	}
	body := map[string]any{"description": ps.Description, "metainfo": metainfo, "enabled": enabled(ps.IsEnabled)}
	switch {
	case ownedMatch != nil:
		p := *ownedMatch
		var diffs []string
		if p.Enabled != enabled(ps.IsEnabled) {
			diffs = append(diffs, fmt.Sprintf("service profile %s is_enabled: have=%v want=%v", p.ID, p.Enabled, enabled(ps.IsEnabled)))
		}
		if p.Description != ps.Description {
			diffs = append(diffs, fmt.Sprintf("service profile %s description: have=%q want=%q", p.ID, p.Description, ps.Description))
		}
		if len(diffs) == 0 {
			return p, nil, nil
		}
		if st.bound(p.ID) {
			// Neutron refuses to update a profile bound to a flavor, so the drift is reported.
			return p, diffs, nil
		}
		// Unbound (e.g. left by an interrupted run): Neutron accepts the update.
		var resp struct {
			Profile profile `json:"service_profile"`
		}
		if err := st.svc.Call("PUT", profilesPath+"/"+url.PathEscape(p.ID), nil, map[string]any{"service_profile": body}, &resp); err != nil {
			return profile{}, nil, fmt.Errorf("update service profile %s: %w", p.ID, err)
		}
		p.Description, p.Metainfo, p.Enabled = ps.Description, metainfo, enabled(ps.IsEnabled)
		st.putProfile(p)
		return p, nil, nil
	case unownedMatch != nil:
		var resp struct {
			Profile profile `json:"service_profile"`
		}
		err := st.svc.Call("PUT", profilesPath+"/"+url.PathEscape(unownedMatch.ID), nil, map[string]any{"service_profile": body}, &resp)
		if pdk.IsConflict(err) {
			return profile{}, nil, fmt.Errorf("service profile %s matches but is bound to a flavor, so Neutron will not let it be adopted; "+
				"unbind it from its flavor or delete it, then the next run adopts or replaces it: %w", unownedMatch.ID, err)
		}
		if err != nil {
			return profile{}, nil, fmt.Errorf("adopt service profile %s: %w", unownedMatch.ID, err)
		}
		p := resp.Profile
		if p.ID == "" {
			p = *unownedMatch
			p.Description, p.Metainfo, p.Enabled = ps.Description, metainfo, enabled(ps.IsEnabled)
		}
		st.putProfile(p)
		return p, nil, nil
	}
	body["driver"] = ps.Driver
	var resp struct {
		Profile profile `json:"service_profile"`
	}
	if err := st.svc.Call("POST", profilesPath, nil, map[string]any{"service_profile": body}, &resp); err != nil {
		return profile{}, nil, fmt.Errorf("create service profile: %w", err)
	}
	if resp.Profile.ID == "" {
		return profile{}, nil, fmt.Errorf("create service profile: Neutron answered without an id")
	}
	st.putProfile(resp.Profile)
	return resp.Profile, nil, nil
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// createFlavor makes the flavor, marked as owned; nothing fallible follows the POST.
func (st *state) createFlavor(s Spec) (flavor, error) {
	var resp struct {
		Flavor flavor `json:"flavor"`
	}
	body := map[string]any{"name": s.Name, "service_type": s.serviceType(), "enabled": enabled(s.IsEnabled),
		"description": st.own.Own.markedDescription(s.Description)}
	if err := st.svc.Call("POST", flavorsPath, nil, map[string]any{"flavor": body}, &resp); err != nil {
		return flavor{}, fmt.Errorf("create flavor %q: %w", s.Name, err)
	}
	if resp.Flavor.ID == "" {
		return flavor{}, fmt.Errorf("create flavor %q: Neutron answered without an id", s.Name)
	}
	st.putFlavor(resp.Flavor)
	return resp.Flavor, nil
}

// serviceTypeError is a flavor whose service type differs from the spec's: Neutron cannot change it.
type serviceTypeError struct{ msg string }

func (e *serviceTypeError) Error() string { return e.msg }

// updateFlavor converges description (with the marker) and enabled on an existing flavor. A
// missing marker is how an unowned flavor is adopted: the update stamps it.
func (st *state) updateFlavor(f flavor, s Spec) (flavor, error) {
	if f.ServiceType != s.serviceType() {
		return f, &serviceTypeError{msg: fmt.Sprintf("Router flavor %q already exists in Neutron with service_type=%s, not %s; "+
			"service_type cannot change, so rename the CR's flavor or delete the Neutron one", s.Name, f.ServiceType, s.serviceType())}
	}
	if err := foreignFlavor(st.own, f); err != nil {
		return f, err
	}
	if st.own.Own.userDescription(f.Description) == s.Description && st.own.Own.ownsFlavor(f) && f.Enabled == enabled(s.IsEnabled) {
		return f, nil
	}
	desc := st.own.Own.markedDescription(s.Description)
	var resp struct {
		Flavor flavor `json:"flavor"`
	}
	body := map[string]any{"description": desc, "enabled": enabled(s.IsEnabled)}
	if err := st.svc.Call("PUT", flavorsPath+"/"+url.PathEscape(f.ID), nil, map[string]any{"flavor": body}, &resp); err != nil {
		return f, fmt.Errorf("update flavor %q (%s): %w", s.Name, f.ID, err)
	}
	f.Description, f.Enabled = desc, enabled(s.IsEnabled)
	if resp.Flavor.ID != "" {
		f = resp.Flavor
	}
	st.putFlavor(f)
	return f, nil
}

// bind makes the flavor's profile set hold every wanted profile. Profiles it holds but the spec
// does not want are unbound only when owned: a hand-bound profile is the operator's.
func (st *state) bind(f flavor, want []string, log logf) error {
	bound := slices.Clone(f.ServiceProfiles)
	for _, id := range want {
		if slices.Contains(bound, id) {
			continue
		}
		// Neutron answers with the flavor's id in service_profile.id, so the answer is not read.
		err := st.svc.Call("POST", flavorsPath+"/"+url.PathEscape(f.ID)+"/service_profiles", nil,
			map[string]any{"service_profile": map[string]any{"id": id}}, nil)
		if err != nil && !pdk.IsConflict(err) {
			return fmt.Errorf("bind service profile %s to flavor %q: %w", id, f.Name, err)
		}
		bound = append(bound, id)
	}
	for _, id := range slices.Clone(bound) {
		if slices.Contains(want, id) {
			continue
		}
		p, ok := st.profile(id)
		if !ok {
			var resp struct {
				Profile profile `json:"service_profile"`
			}
			err := st.svc.Call("GET", profilesPath+"/"+url.PathEscape(id), nil, nil, &resp)
			if pdk.IsNotFound(err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("read service profile %s bound to flavor %q: %w", id, f.Name, err)
			}
			p = resp.Profile
		}
		if !st.metaOf(p).owned {
			log("router flavor %s: leaving unowned service profile %s bound", f.Name, id)
			continue
		}
		err := st.svc.Call("DELETE", flavorsPath+"/"+url.PathEscape(f.ID)+"/service_profiles/"+url.PathEscape(id), nil, nil, nil)
		switch {
		case err == nil, pdk.IsNotFound(err):
			bound = slices.DeleteFunc(bound, func(x string) bool { return x == id })
		case pdk.IsConflict(err):
			log("router flavor %s: Neutron refused to unbind service profile %s (left bound): %v", f.Name, id, err)
		default:
			return fmt.Errorf("unbind service profile %s from flavor %q: %w", id, f.Name, err)
		}
	}
	f.ServiceProfiles = bound
	st.putFlavor(f)
	return nil
}
