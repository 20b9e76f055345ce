package osapi

import (
	"fmt"
	"net/http"
	"strings"
)

// Neutron's collections, from the attribute maps of neutron-lib and the extensions the harness's
// ML2 server loads (neutron-lib api/definitions, neutron/extensions). Neutron's generic rules
// (neutron.api.v2.base and neutron_lib.api.attributes) apply to every one: see neutron.go. The
// fields are in the attribute map's order, which is the order Neutron checks them in.

// Neutron's field sizes (neutron_lib.db.constants).
const (
	neutronNameSize        = 255
	neutronDescriptionSize = 255
	neutronProjectIDSize   = 255
)

func neutronID() Field {
	return Field{Name: "id", Type: UUID, Filter: true, Sort: true, Doc: "The resource's UUID."}
}

func neutronName() Field {
	return Field{Name: "name", Type: String, Create: Optional, Update: Optional, Default: "", MaxLen: neutronNameSize,
		Filter: true, Sort: true, Samples: []any{"a", "b"}, Doc: "Human-readable name; names need not be unique."}
}

// neutronProject is the owner attribute: an admin may create for another project; it never
// changes afterwards.
func neutronProject(key string) Field {
	return Field{Name: key, Type: String, Create: Optional, MaxLen: neutronProjectIDSize, Filter: true, Sort: true,
		Doc: "The owning project's id."}
}

// neutronStandard are the standard attributes: description, timestamps and revision.
func neutronStandard() []Field {
	return []Field{
		{Name: "description", Type: String, Create: Optional, Update: Optional, Default: "", MaxLen: neutronDescriptionSize,
			Filter: true, Samples: []any{"d", "e"}, Doc: "Free text."},
		{Name: "created_at", Type: String},
		{Name: "updated_at", Type: String},
		{Name: "revision_number", Type: Integer, Filter: true},
	}
}

func neutronTags() Field {
	return Field{Name: "tags", Type: Strings, Default: []any{},
		Doc: "Tags, set through the /tags sub-resource; returned sorted."}
}

// neutronResource completes a Neutron resource: the owner attribute its map does not name is
// added last (neutron_lib's populate_project_info), as Neutron checks it.
func neutronResource(r *Resource) *Resource {
	r.Service, r.Update, r.dialect = Network, http.MethodPut, neutron{}
	r.Path = "v2.0/" + r.Name
	r.Plural = strings.ReplaceAll(r.Name, "-", "_")
	other := "project_id"
	if r.ProjectKey == "project_id" {
		other = "tenant_id"
	}
	r.Fields = append(r.Fields, neutronProject(other))
	return r
}

func networkResources() []*Resource {
	return []*Resource{
		neutronResource(&Resource{
			Name: "address-scopes", Key: "address_scope", Noun: "address scope", PolicyName: "address_scope",
			ProjectKey: "tenant_id", NotFoundType: "AddressScopeNotFound", NotFound: "Address scope %s could not be found.",
			Fields: []Field{neutronID(), neutronName(), neutronProject("tenant_id"),
				{Name: "shared", Type: Boolean, Create: Optional, Update: Optional, Default: false, Filter: true, Sort: true,
					Samples: []any{false, false}, Doc: "Whether every project may use it (admin only)."},
				{Name: "ip_version", Type: Integer, Create: Required, Enum: []any{4, 6}, Filter: true, Sort: true,
					Samples: []any{4}, Doc: "4 or 6; fixed at creation."},
			},
			checkCreate: adminOnlyTrue("create", "address_scope", "shared"),
			checkUpdate: func(old, ch map[string]any, c Caller) *Response {
				if r := adminOnlyTrue("update", "address_scope", "shared")(ch, c); r != nil {
					return r
				}
				// Sharing is one-way (the contract suite's neutron-subnet-pools.yaml shows it on
				// the real service).
				if old["shared"] == true && ch["shared"] == false {
					r := nerr(http.StatusBadRequest, "AddressScopeUpdateError", "Unable to update address scope %s : Shared address scope can't be unshared.", old["id"])
					return &r
				}
				return nil
			},
		}),
		neutronResource(&Resource{
			Name: "address-groups", Key: "address_group", Noun: "address group", PolicyName: "address_group",
			ProjectKey: "project_id", NotFoundType: "AddressGroupNotFound", NotFound: "Address group %s could not be found.",
			Fields: append([]Field{neutronID(), neutronName(),
				// The attribute map allows 1024 characters, the database column 255: a longer
				// description passes validation and fails in the database.
				{Name: "description", Type: String, Create: Optional, Update: Optional, Default: "", MaxLen: 1024,
					Filter: true, Samples: []any{"d", "e"}, Doc: "Free text; at most 255 characters (the database's limit)."},
				neutronProject("project_id"),
				{Name: "addresses", Type: CIDRs, Create: Optional, Default: []any{},
					Samples: []any{[]any{"10.0.0.1/32"}}, Doc: "IP networks; changed with the add_addresses and remove_addresses actions."},
			}, neutronStandard()[1:]...),
			checkCreate: databaseLimit("description", neutronDescriptionSize),
			// Adding the addresses is a second change within the create.
			createdRevision: func(obj map[string]any) int {
				if list, _ := obj["addresses"].([]any); len(list) > 0 {
					return 1
				}
				return 0
			},
			checkUpdate: func(_, ch map[string]any, c Caller) *Response {
				return databaseLimit("description", neutronDescriptionSize)(ch, c)
			},
		}),
		neutronResource(&Resource{
			Name: "security-groups", Key: "security_group", Noun: "security group", PolicyName: "security_group",
			ProjectKey: "tenant_id", Tags: TagsNeutron, createdRevision: one,
			NotFoundType: "SecurityGroupNotFound", NotFound: "Security group %s does not exist",
			Volatile: []string{"security_group_rules"},
			Fields: append([]Field{neutronID(),
				{Name: "name", Type: String, Create: Optional, Update: Optional, Default: "", MaxLen: neutronNameSize,
					Filter: true, Sort: true, Samples: []any{"a", "b"}, Doc: `Human-readable name; "default" is reserved.`},
				neutronProject("tenant_id"),
				{Name: "security_group_rules", Type: Object, Doc: "The group's rules (two egress rules at creation)."},
				{Name: "stateful", Type: Boolean, Create: Optional, Update: Optional, Default: true,
					Samples: []any{true, false}, Doc: "Whether the group's rules are stateful."},
				{Name: "shared", Type: Boolean, Default: false, Filter: true, Doc: "Shared with this project through RBAC."},
			}, append(neutronStandard(), neutronTags())...),
			checkCreate: func(obj map[string]any, _ Caller) *Response { return defaultGroupName(obj) },
			checkUpdate: func(_, ch map[string]any, _ Caller) *Response { return defaultGroupName(ch) },
		}),
		neutronResource(&Resource{
			Name: "networks", Key: "network", Noun: "network", PolicyName: "network",
			ProjectKey: "tenant_id", Tags: TagsNeutron, createdRevision: one, CreatedOnly: map[string]any{"is_default": false},
			NotFoundType: "NetworkNotFound", NotFound: "Network %s could not be found.",
			Volatile: []string{"provider:segmentation_id"},
			Fields: append([]Field{neutronID(), neutronName(),
				{Name: "subnets", Type: Strings, Default: []any{}},
				{Name: "admin_state_up", Type: Boolean, Create: Optional, Update: Optional, Default: true, Filter: true, Sort: true,
					Samples: []any{true, false}, Doc: "The administrative state."},
				{Name: "status", Type: String, Default: "ACTIVE", Filter: true, Sort: true},
				neutronProject("tenant_id"),
				{Name: "shared", Type: Boolean, Create: Optional, Update: Optional, Default: false, Filter: true,
					Samples: []any{false, false}, Doc: "Whether every project may use it (admin only)."},
				{Name: "mtu", Type: Integer, Create: Optional, Update: Optional, Default: 1450, Filter: true, Sort: true,
					Samples: []any{1400, 1300}, Doc: "The maximum transmission unit."},
				{Name: "port_security_enabled", Type: Boolean, Create: Optional, Update: Optional, Default: true,
					Samples: []any{true, false}, Doc: "The default port security of its ports."},
				{Name: "router:external", Type: Boolean, Create: Optional, Update: Optional, Default: false, Filter: true,
					Doc: "Whether routers may use it as their gateway (admin only)."},
				{Name: "provider:network_type", Type: String, Create: Optional, Update: Optional, Default: "vxlan", Filter: true, AdminOnly: true,
					Doc: "The segment type (admin only); fixed at creation."},
				{Name: "provider:physical_network", Type: String, Create: Optional, Update: Optional, Default: nil,
					Filter: true, AdminOnly: true, Doc: "The physical network of a flat or VLAN segment (admin only); fixed at creation."},
				{Name: "provider:segmentation_id", Type: Integer, Create: Optional, Update: Optional, Default: 1000, Filter: true, AdminOnly: true,
					Doc: "The segment's VLAN or VNI (admin only)."},
				{Name: "availability_zone_hints", Type: Strings, Create: Optional, Default: []any{},
					Doc: "Availability zones to schedule into; fixed at creation."},
				{Name: "availability_zones", Type: Strings, Default: []any{}},
				{Name: "ipv4_address_scope", Type: String, Nullable: true, Default: nil},
				{Name: "ipv6_address_scope", Type: String, Nullable: true, Default: nil},
				{Name: "l2_adjacency", Type: Boolean, Default: true},
			}, append(neutronStandard(), neutronTags())...),
			checkCreate: func(obj map[string]any, c Caller) *Response {
				if r := adminOnlyTrue("create", "network", "shared", "router:external")(obj, c); r != nil {
					return r
				}
				return ml2Provider(obj)
			},
			checkUpdate: func(old, ch map[string]any, c Caller) *Response {
				if r := adminOnlyTrue("update", "network", "shared", "router:external")(ch, c); r != nil {
					return r
				}
				return ml2ProviderUpdate(old, ch)
			},
		}),
	}
}

// one is the revision of an object whose create changed it once more.
func one(map[string]any) int { return 1 }

// adminOnlyTrue is the policy that only an admin may set these booleans to true.
func adminOnlyTrue(verb, policy string, attrs ...string) func(map[string]any, Caller) *Response {
	return func(obj map[string]any, c Caller) *Response {
		if c.Admin {
			return nil
		}
		for _, a := range attrs {
			if obj[a] == true {
				r := nerr(http.StatusForbidden, "PolicyNotAuthorized", "rule:%s_%s:%s is disallowed by policy", verb, policy, a)
				return &r
			}
		}
		return nil
	}
}

// databaseLimit is a column shorter than the attribute map allows: the write fails in the
// database, which Neutron answers with a 500.
func databaseLimit(attr string, size int) func(map[string]any, Caller) *Response {
	return func(obj map[string]any, _ Caller) *Response {
		if s, ok := obj[attr].(string); ok && len([]rune(s)) > size {
			r := nerr(http.StatusInternalServerError, "HTTPInternalServerError", "Request Failed: internal server error while processing your request.")
			return &r
		}
		return nil
	}
}

// defaultGroupName refuses "default", the name of the group Neutron makes for each project.
func defaultGroupName(obj map[string]any) *Response {
	if name, _ := obj["name"].(string); strings.EqualFold(name, "default") {
		r := nerr(http.StatusConflict, "SecurityGroupDefaultAlreadyExists", "Default security group already exists.")
		return &r
	}
	return nil
}

// ml2NetworkTypes are the type drivers of the harness's ML2 configuration.
var ml2NetworkTypes = []string{"flat", "vlan", "vxlan", "geneve"}

// ml2Provider is ML2's check of the provider attributes of a create.
func ml2Provider(obj map[string]any) *Response {
	t, hasType := obj["provider:network_type"]
	_, hasPhys := obj["provider:physical_network"]
	_, hasSeg := obj["provider:segmentation_id"]
	switch {
	case hasType && !containsString(ml2NetworkTypes, t):
		r := invalidInput(fmt.Sprintf("network_type value '%s' not supported", pyStr(t)))
		return &r
	case !hasType && (hasPhys || hasSeg):
		r := invalidInput("network_type required")
		return &r
	}
	return nil
}

// ml2ProviderUpdate is ML2's check of an update: the type and physical network never change,
// and only a VLAN network's segmentation id does.
func ml2ProviderUpdate(old, ch map[string]any) *Response {
	_, t := ch["provider:network_type"]
	_, p := ch["provider:physical_network"]
	_, seg := ch["provider:segmentation_id"]
	switch {
	case t || p:
		r := invalidInput("Plugin does not support updating the following provider network attributes: " +
			"provider:physical_network, provider:network_type")
		return &r
	case seg && old["provider:network_type"] != "vlan":
		r := invalidInput("Only VLAN type networks can be updated.")
		return &r
	}
	return nil
}

func containsString(list []string, v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
