package planner

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/openstack-sync/openstack-sync/host/internal/bindingctx"
)

// FuzzBuild feeds arbitrary binding-context documents through parsing, CR reading and planning:
// whatever shell-operator or a broken CR sends, the run gets an error or a plan, never a panic
// (docs/contract.md Decision 1). The fixtures of the golden table are the seeds.
func FuzzBuild(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`[{"binding":"widgets","type":"Event","watchEvent":"Modified","object":{"metadata":{"generation":1},"status":{"syncStatus":"Synced","observedGeneration":1}},"snapshots":{"widgets":[null,1,"x",[]]}}]`))
	log := slog.New(slog.DiscardHandler)
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := bindingctx.Parse(data)
		if err != nil {
			return
		}
		plan, err := Build(doc.Contexts, Options{Binding: "widgets", Kind: "Widget", Log: log})
		if err != nil {
			return
		}
		for _, r := range plan.Reconcile {
			if r.Deleting {
				t.Fatalf("a deleting CR %s is planned for reconcile", r.Ref())
			}
		}
		for _, r := range plan.Desired {
			if r.Deleting {
				t.Fatalf("a deleting CR %s is in the desired set", r.Ref())
			}
		}
	})
}
