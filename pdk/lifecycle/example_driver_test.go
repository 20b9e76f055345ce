package lifecycle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/openstack-sync/openstack-sync/pdk/lifecycle"
)

// A flavor plugin's view of one CR: the shared lifecycle fields, decoded from the CR.
type flavorCR struct {
	*lifecycle.Fields[flavorSpec, flavorFilter]
}

type flavorSpec struct {
	Name string `json:"name"`
}

type flavorFilter struct {
	Name string `json:"name"`
}

type flavor struct{ ID, Name string }

// flavors stands in for OpenStack; a real actuator sends requests with pdk.Context.OpenStack.
type flavors struct {
	byID map[string]flavor
	n    int
}

func (f *flavors) ResourceID(fl *flavor) string { return fl.ID }

func (f *flavors) GetByID(_ context.Context, id string) (*flavor, lifecycle.Progress) {
	if fl, ok := f.byID[id]; ok {
		return &fl, lifecycle.Done()
	}
	return nil, lifecycle.Done() // not found
}

func (f *flavors) named(name string) iter.Seq2[*flavor, error] {
	return func(yield func(*flavor, error) bool) {
		for _, fl := range f.byID {
			if fl.Name == name && !yield(&fl, nil) {
				return
			}
		}
	}
}

func (f *flavors) ListForAdoption(_ context.Context, cr flavorCR) (iter.Seq2[*flavor, error], bool) {
	if cr.ResourceSpec() == nil {
		return nil, false
	}
	return f.named(cr.ResourceSpec().Name), true
}

func (f *flavors) ListForImport(_ context.Context, _ flavorCR, filter flavorFilter) (iter.Seq2[*flavor, error], lifecycle.Progress) {
	return f.named(filter.Name), lifecycle.Done()
}

func (f *flavors) Create(_ context.Context, cr flavorCR) (*flavor, lifecycle.Progress) {
	f.n++
	fl := flavor{ID: fmt.Sprintf("id-%d", f.n), Name: cr.ResourceSpec().Name}
	f.byID[fl.ID] = fl
	return &fl, lifecycle.Done()
}

func (f *flavors) Delete(_ context.Context, _ flavorCR, fl *flavor) lifecycle.Progress {
	delete(f.byID, fl.ID)
	return lifecycle.Done()
}

func (f *flavors) Adapter(cr flavorCR) lifecycle.Adapter[flavorSpec, flavorFilter] { return cr.Fields }

func (f *flavors) NewCreateActuator(context.Context, flavorCR) (lifecycle.CreateActuator[flavorCR, flavorFilter, flavor], lifecycle.Progress) {
	return f, lifecycle.Done()
}

func (f *flavors) NewDeleteActuator(context.Context, flavorCR) (lifecycle.DeleteActuator[flavorCR, flavor], lifecycle.Progress) {
	return f, lifecycle.Done()
}

func (f *flavors) Available(flavorCR, *flavor) (lifecycle.ConditionStatus, lifecycle.Progress) {
	return lifecycle.ConditionTrue, lifecycle.Done()
}

func (f *flavors) Observed(fl *flavor) any { return map[string]string{"name": fl.Name} }

func decode(spec string, status map[string]any) flavorCR {
	fields, err := lifecycle.DecodeFields[flavorSpec, flavorFilter](json.RawMessage(spec), status)
	if err != nil {
		panic(err)
	}
	return flavorCR{fields}
}

// A managed CR is created once; a run whose status write was lost adopts what the first run
// created; an unmanaged CR imports by filter; the delete flow deletes by status.id.
func ExampleDriver() {
	cloud := &flavors{byID: map[string]flavor{}}
	d := &lifecycle.Driver[flavorCR, flavorSpec, flavorFilter, flavor]{Factory: cloud, Status: cloud, Noun: "flavor"}
	ctx := context.Background()

	out := d.Reconcile(ctx, decode(`{"resource":{"name":"gold"}}`, nil))
	fmt.Println("created:", out.ID, out.Progress.Reason(), out.Available)

	// The status write failed, so the CR still has no status.id: adoption finds the flavor.
	out = d.Reconcile(ctx, decode(`{"resource":{"name":"gold"}}`, nil))
	fmt.Println("adopted:", out.ID, "flavors in OpenStack:", len(cloud.byID))

	out = d.Reconcile(ctx, decode(`{"managementPolicy":"unmanaged","import":{"filter":{"name":"silver"}}}`, nil))
	fmt.Println("import:", out.Progress.Reason(), "-", out.Progress.Message())

	out = d.Delete(ctx, decode(`{"resource":{"name":"gold"}}`, map[string]any{"id": "id-1"}))
	fmt.Println("deleted:", out.Progress.IsDone(), "flavors in OpenStack:", len(cloud.byID))
	// Output:
	// created: id-1 Success True
	// adopted: id-1 flavors in OpenStack: 1
	// import: Progressing - waiting for a flavor matching spec.import.filter
	// deleted: true flavors in OpenStack: 0
}
