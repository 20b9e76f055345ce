package fakecloud

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Flavor is a Neutron network flavor as the fake stores it.
type Flavor struct {
	ID, Name, Description string
	// ServiceType defaults to L3_ROUTER_NAT when seeded empty.
	ServiceType string
	Enabled     bool
	// ServiceProfiles are the ids of the bound service profiles.
	ServiceProfiles []string
}

// ServiceProfile is a Neutron service profile; MetaInfo is the JSON text Neutron stores.
type ServiceProfile struct {
	ID, Description, Driver, MetaInfo string
	Enabled                           bool
}

// Router is a Neutron router; only what router flavors need.
type Router struct {
	ID, Name, FlavorID, ProjectID string
}

// SegmentRange is a Neutron network segment range.
type SegmentRange struct {
	ID, Name, Description, NetworkType, PhysicalNetwork, ProjectID string
	Minimum, Maximum                                               int
	Shared, Default                                                bool
}

// Runbook is an Ironic runbook. A nil Owner is Ironic's null owner.
type Runbook struct {
	UUID, Name     string
	Steps          []RunbookStep
	DisableRamdisk bool
	Public         bool
	Owner          *string
	Extra          map[string]any
	Description    *string
	Traits         []string
}

// Flavors returns the flavors in creation order.
func (c *Cloud) Flavors() []Flavor {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Flavor
	for _, f := range c.flavors {
		cp := *f
		cp.ServiceProfiles = slices.Clone(f.ServiceProfiles)
		out = append(out, cp)
	}
	return out
}

// AddFlavor seeds a flavor, e.g. one no operator owns, and returns it with its id.
func (c *Cloud) AddFlavor(f Flavor) Flavor {
	if f.ID == "" {
		f.ID = newUUID()
	}
	if f.ServiceType == "" {
		f.ServiceType = "L3_ROUTER_NAT"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range f.ServiceProfiles {
		if c.findProfile(p) == nil {
			panic(fmt.Sprintf("fakecloud: AddFlavor: no service profile %q", p))
		}
	}
	rec := f
	rec.ServiceProfiles = slices.Clone(f.ServiceProfiles)
	c.flavors = append(c.flavors, &rec)
	c.flavorIDs.added(&rec)
	return f
}

// ServiceProfiles returns the service profiles in creation order.
func (c *Cloud) ServiceProfiles() []ServiceProfile {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []ServiceProfile
	for _, p := range c.profiles {
		out = append(out, *p)
	}
	return out
}

// AddServiceProfile seeds a service profile and returns it with its id. The driver is not
// checked, so a test can seed what an older configuration left behind.
func (c *Cloud) AddServiceProfile(p ServiceProfile) ServiceProfile {
	if p.ID == "" {
		p.ID = newUUID()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := p
	c.profiles = append(c.profiles, &rec)
	c.profileIDs.added(&rec)
	return p
}

// AddRouter seeds a router, e.g. one that keeps a flavor in use.
func (c *Cloud) AddRouter(r Router) Router {
	if r.ID == "" {
		r.ID = newUUID()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.ProjectID == "" {
		r.ProjectID = c.projects["admin"]
	}
	c.routers = append(c.routers, &routerRec{Router: r, Created: time.Now().UTC()})
	return r
}

// SegmentRanges returns the segment ranges, the three defaults of the ML2 configuration first.
func (c *Cloud) SegmentRanges() []SegmentRange {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []SegmentRange
	for _, s := range c.ranges {
		out = append(out, s.SegmentRange)
	}
	return out
}

// runbooks is the collection Runbooks and AddRunbook read and seed.
const runbooks = "baremetal:runbooks"

// Runbooks returns the runbooks in creation order.
func (c *Cloud) Runbooks() []Runbook {
	var out []Runbook
	for _, o := range c.known.Objects(runbooks) {
		rb := Runbook{UUID: str(o["uuid"]), Name: str(o["name"]), DisableRamdisk: o["disable_ramdisk"] == true,
			Public: o["public"] == true, Extra: map[string]any{}}
		if owner, ok := o["owner"].(string); ok {
			rb.Owner = &owner
		}
		if d, ok := o["description"].(string); ok {
			rb.Description = &d
		}
		if extra, ok := o["extra"].(map[string]any); ok {
			rb.Extra = extra
		}
		steps, _ := o["steps"].([]any)
		for _, st := range steps {
			m, _ := st.(map[string]any)
			args, _ := m["args"].(map[string]any)
			order, _ := m["order"].(float64)
			if text, ok := m["order"].(string); ok {
				n, _ := strconv.Atoi(text)
				order = float64(n)
			}
			rb.Steps = append(rb.Steps, RunbookStep{Interface: str(m["interface"]), Step: str(m["step"]), Args: args, Order: int(order)})
		}
		traits, _ := o["traits"].([]any)
		for _, t := range traits {
			rb.Traits = append(rb.Traits, str(t))
		}
		out = append(out, rb)
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// AddRunbook seeds a runbook without the API's checks, e.g. an unowned one to adopt.
func (c *Cloud) AddRunbook(rb Runbook) Runbook {
	if rb.UUID == "" {
		rb.UUID = newUUID()
	}
	if rb.Extra == nil {
		rb.Extra = map[string]any{}
	}
	steps := []any{}
	for _, st := range rb.Steps {
		args := st.Args
		if args == nil {
			args = map[string]any{}
		}
		steps = append(steps, map[string]any{"interface": st.Interface, "step": st.Step, "args": args, "order": st.Order})
	}
	obj := map[string]any{"uuid": rb.UUID, "name": rb.Name, "steps": steps, "disable_ramdisk": rb.DisableRamdisk,
		"public": rb.Public, "owner": nil, "extra": rb.Extra}
	if rb.Owner != nil {
		obj["owner"] = *rb.Owner
	}
	if rb.Description != nil {
		obj["description"] = *rb.Description
	}
	if rb.Traits != nil {
		obj["traits"] = slices.Clone(rb.Traits)
	}
	if _, err := c.known.Add(runbooks, obj); err != nil {
		panic(fmt.Sprintf("fakecloud: AddRunbook: %v", err))
	}
	return rb
}
