package resource

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParse reads arbitrary JSON as a CR: the result is a Resource or an *Error naming the CR,
// never a panic (docs/contract.md Decision 1), and a readable CR's spec never carries its credentials.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"metadata":{"name":"a","namespace":"ns","generation":2,"finalizers":["x","openstack-sync.io/finalizer"]},"spec":{"cloudCredentialsRef":{"secretName":"s","cloudName":"c"},"name":"n"},"status":{"syncStatus":"Synced"}}`,
		`{"metadata":null,"spec":{}}`,
		`{"metadata":{"generation":1.5,"deletionTimestamp":3},"status":[]}`,
		`{"metadata":{"name":7},"spec":{"cloudCredentialsRef":"x"}}`,
		`"text"`, `null`, `[]`, `{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var obj any
		if dec.Decode(&obj) != nil {
			return
		}
		r, err := Parse(obj, "")
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error of type %T, want *resource.Error", err)
			}
			return
		}
		var spec map[string]any
		if err := json.Unmarshal(r.Spec, &spec); err != nil {
			t.Fatalf("spec %s is not a JSON object: %v", r.Spec, err)
		}
		if _, ok := spec["cloudCredentialsRef"]; ok {
			t.Fatal("spec keeps cloudCredentialsRef")
		}
		if r.Credentials.SecretName == "" || r.Credentials.CloudName == "" || r.Credentials.Namespace == "" {
			t.Fatalf("readable CR with an incomplete credential group %+v", r.Credentials)
		}
		_, _, _ = r.Identity(), r.Display(), r.Ref()
	})
}
