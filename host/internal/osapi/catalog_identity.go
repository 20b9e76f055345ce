package osapi

import (
	"fmt"
	"net/http"
)

// Keystone's collections, from the JSON schemas keystone 27 validates requests with
// (keystone/resource/schema.py, identity/schema.py, assignment/schema.py) and what its managers
// add: unique names (409), references that must exist, fields that cannot change after creation.
// The fields are in their schema's order, which is the order Keystone reports errors in. Keystone's
// generic rules are in keystone.go.

// Keystone's name and id limits.
const (
	keystoneProjectNameSize = 64
	keystoneNameSize        = 255
	keystoneIDSize          = 64
	keystoneTagSize         = 255
	keystoneMaxTags         = 80
	// keystoneIDPattern is id_string's pattern.
	keystoneIDPattern = `^[a-zA-Z0-9-]+$`
	// keystoneNamePattern is the names' pattern: at least one non-space character somewhere.
	keystoneNamePattern = `[\S]+`
	// keystoneTagPattern: a tag holds no ',' or '/' (the API working group's tag guideline).
	keystoneTagPattern = `^[^,/]*$`
)

// keystoneRules are what one Keystone resource does its own way.
type keystoneRules struct {
	// query lists the query parameters a list accepts; nil ignores unknown ones.
	query []string
	// queryUUID are query parameters that must be UUID-like.
	queryUUID []string
	// refStatus is the status of a create naming a reference that does not exist (400 or 404);
	// 0 checks no reference.
	refStatus int
	// immutable answers an update that changes a field fixed at creation.
	immutable map[string]Response
	// emptyUpdate accepts an update that names no field.
	emptyUpdate bool
	// extraInUpdate: the answer to an update shows the extras again under "extra".
	extraInUpdate bool
	// strictAnswer: the answer is checked against a schema without extras, in this key order;
	// an object stored with an extra (a create or update Keystone accepted) fails that check,
	// and so does every later answer that shows it (Keystone 27's domains).
	strictAnswer []string
	// conflict is the text of a 409 for a taken name; renameFails makes a rename to a taken
	// name fail in the database instead (500).
	conflict    func(obj map[string]any, create bool) string
	renameFails bool
	// tags: the /{id}/tags sub-resource exists.
	tags bool
	// readOwn lets a member read the object its token is scoped to (its project).
	readOwn bool
	// tagFilters: lists filter by tags, tags-any, not-tags and not-tags-any.
	tagFilters bool
	// globalByDefault: a list without a domain_id filter shows the global objects only (roles).
	globalByDefault bool
}

func keystoneID() Field {
	return Field{Name: "id", Type: String, Doc: "The id Keystone assigns."}
}

func keystoneDescription() Field {
	return Field{Name: "description", Type: String, Create: Optional, Update: Optional, Nullable: true, Default: "",
		Samples: []any{"d", "e"}, Doc: "Free text."}
}

func keystoneEnabled() Field {
	return Field{Name: "enabled", Type: Boolean, Create: Optional, Update: Optional, Default: true, Filter: true,
		Samples: []any{true, false}, Doc: "Whether it may be used."}
}

func keystoneTags() Field {
	return Field{Name: "tags", Type: Strings, Create: Optional, Update: Optional, Default: []any{},
		MaxItems: keystoneMaxTags, Unique: true, Samples: []any{[]any{"b", "a"}, []any{"c"}},
		Items: &Field{Type: String, MinLen: 1, MaxLen: keystoneTagSize, Pattern: keystoneTagPattern},
		Doc:   "Up to 80 distinct tags of 1 to 255 characters without ',' or '/'; listed sorted."}
}

// keystoneOptions is the resource options object; each known option may be null.
func keystoneOptions(names ...string) Field {
	var opts []Field
	for _, n := range names {
		opts = append(opts, Field{Name: n, Type: Boolean, Nullable: true})
	}
	return Field{Name: "options", Type: Object, Create: Optional, Update: Optional, Default: map[string]any{},
		Props: opts, Doc: "Resource options, e.g. immutable."}
}

func keystoneName(size int, doc string) Field {
	return Field{Name: "name", Type: String, Create: Required, Update: Optional, MinLen: 1, MaxLen: size,
		Pattern: keystoneNamePattern, Filter: true, Samples: []any{"a", "b"}, Doc: doc}
}

func badRequestK(msg string) Response { return kerr(http.StatusBadRequest, "Bad Request", "%s", msg) }

func identityResources() []*Resource {
	k := keystone{}
	return []*Resource{
		{
			Service: Identity, Name: "projects", Path: "v3/projects", Key: "project", Plural: "projects", Noun: "project",
			Update: http.MethodPatch, dialect: k, Tags: TagsKeystone, UniqueName: []string{"domain_id"}, Extra: true, AdminOnly: true,
			PolicyName: "project", NotFound: "Could not find project: %s.",
			Fields: []Field{
				keystoneID(),
				keystoneDescription(),
				{Name: "domain_id", Type: String, Create: Optional, Nullable: true, Default: "default", MinLen: 1, MaxLen: keystoneIDSize,
					Pattern: keystoneIDPattern, Ref: "identity:domains", Filter: true,
					Doc: "The owning domain (default: the token's); fixed at creation."},
				keystoneEnabled(),
				{Name: "is_domain", Type: Boolean, Create: Optional, Default: false, Filter: true,
					Doc: "Whether the project acts as a domain; fixed at creation."},
				{Name: "parent_id", Type: String, Create: Optional, Nullable: true, Default: "default", MinLen: 1, MaxLen: keystoneIDSize,
					Pattern: keystoneIDPattern, Ref: "identity:projects", Filter: true,
					Doc: "The parent project (default: the domain); fixed at creation."},
				keystoneName(keystoneProjectNameSize, "Unique within the domain; at most 64 characters."),
				keystoneTags(),
				keystoneOptions("immutable"),
			},
			keystone: &keystoneRules{
				queryUUID: []string{"parent_id"}, refStatus: http.StatusBadRequest, emptyUpdate: true, extraInUpdate: true,
				tags: true, readOwn: true, renameFails: true, tagFilters: true,
				immutable: map[string]Response{
					"domain_id": badRequestK("Cannot change Domain ID"),
					"parent_id": kerr(http.StatusForbidden, "Forbidden", "Update of `parent_id` is not allowed."),
					"is_domain": badRequestK("Update of `is_domain` is not allowed."),
				},
				conflict: func(obj map[string]any, _ bool) string {
					return fmt.Sprintf("Conflict occurred attempting to store project - it is not permitted to have two projects "+
						"with either the same name or same id in the same domain: name is %s, project id %s.", obj["name"], obj["id"])
				},
			},
		},
		{
			Service: Identity, Name: "domains", Path: "v3/domains", Key: "domain", Plural: "domains", Noun: "domain",
			Update: http.MethodPatch, dialect: k, Tags: TagsKeystone, UniqueName: []string{}, Extra: true, AdminOnly: true, PolicyName: "domain",
			NotFound: "Could not find domain: %s.", DeleteEnabled: "Cannot delete a domain that is enabled, please disable it first.",
			Fields: []Field{
				keystoneID(),
				keystoneDescription(),
				keystoneEnabled(),
				keystoneName(keystoneProjectNameSize, "Unique in the cloud; at most 64 characters."),
				keystoneOptions("immutable"),
				keystoneTags(),
			},
			keystone: &keystoneRules{
				strictAnswer: []string{"id", "name", "description", "enabled", "tags", "options", "links"},
				conflict: func(obj map[string]any, _ bool) string {
					return fmt.Sprintf("Conflict occurred attempting to store project - it is not permitted to have two projects "+
						"acting as domains with the same name: %s.", obj["name"])
				},
			},
		},
		{
			Service: Identity, Name: "groups", Path: "v3/groups", Key: "group", Plural: "groups", Noun: "group",
			Update: http.MethodPatch, dialect: k, UniqueName: []string{"domain_id"}, Extra: true, AdminOnly: true, PolicyName: "group",
			NotFound: "Could not find group: %s.",
			Fields: []Field{
				keystoneID(),
				keystoneDescription(),
				{Name: "domain_id", Type: String, Create: Optional, Default: "default", MinLen: 1, MaxLen: keystoneIDSize,
					Pattern: keystoneIDPattern, Ref: "identity:domains", Filter: true,
					Doc: "The owning domain (default: the token's); fixed at creation."},
				keystoneName(keystoneNameSize, "Unique within the domain."),
			},
			keystone: &keystoneRules{
				query: []string{"domain_id", "name", "limit", "marker"}, refStatus: http.StatusNotFound,
				immutable: map[string]Response{"domain_id": badRequestK("Cannot change Domain ID")},
				conflict: func(obj map[string]any, create bool) string {
					if create {
						return fmt.Sprintf("Conflict occurred attempting to store group - Duplicate entry found with name %s at domain ID %s.",
							obj["name"], obj["domain_id"])
					}
					return fmt.Sprintf("Conflict occurred attempting to store group - Duplicate entry found with name %s.", obj["name"])
				},
			},
		},
		{
			Service: Identity, Name: "roles", Path: "v3/roles", Key: "role", Plural: "roles", Noun: "role",
			Update: http.MethodPatch, dialect: k, UniqueName: []string{"domain_id"}, Extra: true, AdminOnly: true, PolicyName: "role",
			NotFound: "Could not find role: %s.",
			Fields: []Field{
				keystoneID(),
				keystoneName(keystoneNameSize, "Unique within its domain (or among global roles)."),
				{Name: "description", Type: String, Create: Optional, Update: Optional, Nullable: true, Default: nil,
					Samples: []any{"d", "e"}, Doc: "Free text."},
				{Name: "domain_id", Type: String, Create: Optional, Nullable: true, Default: nil, MinLen: 1,
					MaxLen: keystoneIDSize, Pattern: keystoneIDPattern, Filter: true,
					Doc: "The domain of a domain-specific role, which Keystone does not check; null for a global role; fixed at creation."},
				keystoneOptions("immutable"),
			},
			keystone: &keystoneRules{
				query: []string{"name", "domain_id"}, globalByDefault: true,
				conflict: func(obj map[string]any, _ bool) string {
					return fmt.Sprintf("Conflict occurred attempting to store role - Duplicate entry found with name %s.", obj["name"])
				},
			},
		},
	}
}
