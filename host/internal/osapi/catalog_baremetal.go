package osapi

import "net/http"

// Ironic's collections, from the schemas and controllers of Ironic 29 (the real-parts tier's
// 2025.1, API 1.1 to 1.96: ironic/api/controllers/v1/runbook.py, deploy_template.py, utils.py)
// and what its database and policies add. Ironic's generic rules (JSON Patch updates,
// microversions, its error body) are in ironic.go. The fields are in their schema's order, which
// is the order jsonschema checks them in.

// IronicVersion is the newest microversion of the real-parts tier's Ironic, the one these rules
// were read at: a plugin should send it (or the collection's MinVersion) on every request.
const IronicVersion = "1.96"

// ironicDescriptionVersion shows a runbook's description and traits, and lifts the rule that
// its name is a trait (Ironic 1.112; no Ironic the tier runs has it, so these rules are from
// Ironic's API reference, not measured).
const ironicDescriptionVersion = "1.112"

// customTrait is the pattern of Ironic's custom trait names, the names runbooks and deploy
// templates take. (A standard os-traits name is accepted too; the embedded cloud does not carry
// that list and refuses them.)
const customTrait = `^CUSTOM_[A-Z0-9_]+$`

// The step interfaces, in the order Ironic lists them in its errors (its priority maps).
var (
	stepInterfaces = []any{"vendor", "power", "management", "firmware", "deploy", "bios", "raid"}
)

// ironicStepSchema is RUNBOOK_STEP_SCHEMA (key "order") or DEPLOY_STEP_SCHEMA (key "priority",
// args required).
func ironicStepSchema(orderKey string, interfaces []any, argsRequired bool) *jsonSchema {
	required := []string{"interface", "step", orderKey}
	props := []jsonProp{
		{"args", &jsonSchema{Types: []string{"object"}}},
		{"interface", &jsonSchema{Types: []string{"string"}, Enum: interfaces}},
		{orderKey, &jsonSchema{AnyOf: []*jsonSchema{
			{Types: []string{"integer"}, Minimum: 0, HasMinimum: true},
			{Types: []string{"string"}, MinLength: 1, Pattern: `^[0-9]+$`},
		}}},
		{"step", &jsonSchema{Types: []string{"string"}, MinLength: 1}},
	}
	if argsRequired {
		required = []string{"interface", "step", "args", orderKey}
	} else {
		// RUNBOOK_STEP_SCHEMA lists step before order.
		props[2], props[3] = props[3], props[2]
	}
	return &jsonSchema{Types: []string{"object"}, Props: props, Required: required, NoExtra: true}
}

// ironicTraitName is TRAITS_SCHEMA; its second branch is os-traits' standard names, which this
// package does not carry: it accepts none of them.
func ironicTraitName() *jsonSchema {
	return &jsonSchema{Types: []string{"string"}, MinLength: 1, MaxLength: 255,
		AnyOf: []*jsonSchema{{Pattern: customTrait}, {Enum: []any{nil}}}}
}

func nullable(t string) []string { return []string{t, "null"} }

func ironicUUID() Field {
	return Field{Name: "uuid", Type: UUID, Create: Optional, Nullable: true, Doc: "The UUID Ironic assigns (or the one a create sends)."}
}

func ironicName(noun string) Field {
	return Field{Name: "name", Type: String, Create: Required, Update: Optional, MinLen: 1, MaxLen: 255, Pattern: customTrait,
		Sort: true, Samples: []any{"CUSTOM_A", "CUSTOM_B"},
		Doc: "A custom trait name (CUSTOM_ then A-Z, 0-9, _), unique among " + noun + "s; a node asks for the " + noun + " by it."}
}

func ironicTimes() []Field {
	return []Field{{Name: "created_at", Type: String, Sort: true}, {Name: "updated_at", Type: String, Nullable: true, Sort: true}}
}

func baremetalResources() []*Resource {
	steps := func(orderKey, doc string) Field {
		step := func(iface, name string, args map[string]any, order int) []any {
			return []any{map[string]any{"interface": iface, "step": name, "args": args, orderKey: order}}
		}
		return Field{Name: "steps", Type: Objects, Create: Required, Update: Optional, MinItems: 1,
			Samples: []any{step("bios", "apply_configuration", map[string]any{"settings": []any{}}, 1),
				step("deploy", "erase_devices", map[string]any{}, 2)},
			Doc: doc}
	}
	return []*Resource{
		{
			Service: Baremetal, Name: "runbooks", Path: "v1/runbooks", Key: "runbook", Plural: "runbooks", Noun: "runbook",
			Update: http.MethodPatch, JSONPatch: true, MinVersion: "1.92", UniqueName: []string{}, PolicyName: "runbook",
			NotFound: "Runbook %s could not be found.", dialect: ironic{},
			Fields: append([]Field{
				ironicUUID(),
				ironicName("runbook"),
				{Name: "description", Type: String, Create: Optional, Nullable: true, MaxLen: 255, Since: ironicDescriptionVersion,
					Doc: "Free text, shown from microversion 1.112; before it Ironic accepts it on create and drops it."},
				steps("order", "The steps to run, each {interface, step, args, order}; no two with the same interface and step."),
				{Name: "disable_ramdisk", Type: Boolean, Create: Optional, Nullable: true, Default: false, Samples: []any{true},
					Doc: "Run the steps without booting the ramdisk; fixed at creation."},
				{Name: "extra", Type: Object, Create: Optional, Update: Optional, Nullable: true, Default: map[string]any{},
					Samples: []any{map[string]any{"a": "b"}, map[string]any{"x": "1"}}, Doc: "Free-form metadata."},
				{Name: "public", Type: Boolean, Create: Optional, Update: Optional, Nullable: true, Default: false,
					Samples: []any{false, false}, Doc: "Whether every project may use it; only a system-scoped admin may set it."},
				{Name: "owner", Type: String, Create: Optional, Update: Optional, Nullable: true, MaxLen: 255,
					Doc: "The owning project: a project-scoped admin's own; only a system-scoped admin may choose or change it."},
			}, ironicTimes()...),
			ironic: &ironicRules{
				bodyName: "runbook", policy: "baremetal:runbook", owned: true, orderKey: "order",
				notAllowed:   "The API version does not allow runbooks",
				patchable:    []string{"extra", "name", "steps", "description", "public", "owner"},
				show:         []string{"name", "extra", "public", "owner", "disable_ramdisk"},
				conflict:     "A runbook with name %s already exists.",
				uuidConflict: "A runbook with UUID %s already exists.",
				schema: &jsonSchema{Types: []string{"object"}, Required: []string{"steps", "name"}, NoExtra: true, Props: []jsonProp{
					{"uuid", &jsonSchema{Types: nullable("string")}},
					{"name", ironicTraitName()},
					{"description", &jsonSchema{Types: nullable("string"), MaxLength: 255}},
					{"steps", &jsonSchema{Types: []string{"array"}, Items: ironicStepSchema("order", stepInterfaces, false), MinItems: 1}},
					{"disable_ramdisk", &jsonSchema{Types: nullable("boolean")}},
					{"extra", &jsonSchema{Types: nullable("object")}},
					{"public", &jsonSchema{Types: nullable("boolean")}},
					{"owner", &jsonSchema{Types: nullable("string"), MaxLength: 255}},
				}},
			},
		},
		{
			Service: Baremetal, Name: "deploy-templates", Path: "v1/deploy_templates", Key: "deploy_template", Plural: "deploy_templates",
			Noun: "deploy template", Update: http.MethodPatch, JSONPatch: true, MinVersion: "1.55", UniqueName: []string{},
			SystemScoped: true, PolicyName: "deploy_template", NotFound: "Deploy template %s could not be found.", dialect: ironic{},
			Fields: append([]Field{
				{Name: "description", Type: String, Create: Optional, Nullable: true, MaxLen: 255, Since: "2.0",
					Doc: "Accepted on create and dropped: no microversion shows it."},
				{Name: "extra", Type: Object, Create: Optional, Update: Optional, Nullable: true, Default: map[string]any{},
					Samples: []any{map[string]any{"a": "b"}, map[string]any{"x": "1"}}, Doc: "Free-form metadata."},
				ironicName("deploy template"),
				steps("priority", "The deploy steps, each {interface, step, args, priority}; no two with the same interface and step."),
				ironicUUID(),
			}, ironicTimes()...),
			ironic: &ironicRules{
				bodyName: "template", policy: "baremetal:deploy_template", orderKey: "priority",
				notAllowed:   "The API version does not allow deploy templates",
				patchable:    []string{"extra", "name", "steps", "description"},
				show:         []string{"name", "extra"},
				conflict:     "A deploy template with name %s already exists.",
				uuidConflict: "A deploy template with UUID %s already exists.",
				schema: &jsonSchema{Types: []string{"object"}, Required: []string{"steps", "name"}, NoExtra: true, Props: []jsonProp{
					{"description", &jsonSchema{Types: nullable("string"), MaxLength: 255}},
					{"extra", &jsonSchema{Types: nullable("object")}},
					{"name", ironicTraitName()},
					{"steps", &jsonSchema{Types: []string{"array"}, Items: ironicStepSchema("priority", stepInterfaces, true), MinItems: 1}},
					{"uuid", &jsonSchema{Types: nullable("string")}},
				}},
			},
		},
	}
}
