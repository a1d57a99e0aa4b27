package v1

import (
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
)

// An entry is written as Flux writes one — only id and v — and reads back
// as the same entry, through encoding/json and through the unstructured
// converter the API machinery uses.
func TestAnInventoryEntryIsFluxsResourceRef(t *testing.T) {
	for _, tc := range []struct {
		entry InventoryEntry
		json  string
	}{
		{InventoryEntry{Version: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "web"},
			`{"id":"apps_web__ConfigMap","v":"v1"}`},
		{InventoryEntry{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "apps", Name: "web"},
			`{"id":"apps_web_apps_Deployment","v":"v1"}`},
		{InventoryEntry{Version: "v1", Kind: "Namespace", Name: "apps"},
			`{"id":"_apps__Namespace","v":"v1"}`},
		{InventoryEntry{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "system:web:view"},
			`{"id":"_system__web__view_rbac.authorization.k8s.io_ClusterRole","v":"v1"}`},
		{InventoryEntry{Group: "kustomize.plumb.dev", Version: "v1", Kind: "Kustomization", Namespace: "flux-system", Name: "a_b"},
			`{"id":"flux-system_a_b_kustomize.plumb.dev_Kustomization","v":"v1"}`},
	} {
		data, err := json.Marshal(tc.entry)
		if err != nil || string(data) != tc.json {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", tc.entry, data, err, tc.json)
		}
		var back InventoryEntry
		if err := json.Unmarshal(data, &back); err != nil || back != tc.entry {
			t.Errorf("Unmarshal(%s) = %+v, %v; want %+v", data, back, err, tc.entry)
		}
		inv := &Inventory{Entries: []InventoryEntry{tc.entry}}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(inv)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(u["entries"]); got != fmt.Sprint([]any{map[string]any{"id": tc.entry.ID(), "v": "v1"}}) {
			t.Errorf("unstructured entries = %s", got)
		}
		var out Inventory
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &out); err != nil || !equality.Semantic.DeepEqual(&out, inv) {
			t.Errorf("FromUnstructured = %+v, %v; want %+v", out, err, inv)
		}
	}
}

// An inventory stored in Plumb's earlier shape is read, so an upgraded
// sync-controller still prunes what it lists; and it never equals the
// same inventory made afresh, so the status writer writes it again in
// Flux's shape.
func TestAnInventoryInTheEarlierShapeIsReadAndRewritten(t *testing.T) {
	var stored Inventory
	err := json.Unmarshal([]byte(`{"entries":[{"group":"apps","version":"v1","kind":"Deployment","namespace":"a","name":"web"}]}`), &stored)
	if err != nil {
		t.Fatal(err)
	}
	fresh := Inventory{Entries: []InventoryEntry{{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "a", Name: "web"}}}
	e := stored.Entries[0]
	if e.Group != "apps" || e.Version != "v1" || e.Kind != "Deployment" || e.Namespace != "a" || e.Name != "web" {
		t.Errorf("read %+v", e)
	}
	if equality.Semantic.DeepEqual(&stored, &fresh) {
		t.Error("an inventory in the earlier shape equals one made afresh: it would never be rewritten")
	}
	if data, _ := json.Marshal(stored); string(data) != `{"entries":[{"id":"a_web_apps_Deployment","v":"v1"}]}` {
		t.Errorf("written again as %s", data)
	}
}

// A malformed entry is an error, not an empty entry that prune would
// skip.
func TestAMalformedInventoryEntryIsAnError(t *testing.T) {
	for _, in := range []string{`{"id":"web","v":"v1"}`, `{"id":"a_web","v":"v1"}`, `{"id":"a_web_apps_","v":"v1"}`, `{"v":"v1"}`, `{}`} {
		var e InventoryEntry
		if err := json.Unmarshal([]byte(in), &e); err == nil {
			t.Errorf("Unmarshal(%s) = %+v, no error", in, e)
		}
	}
}

func ExampleParseInventoryID() {
	e, _ := ParseInventoryID("_system__auth-delegator_rbac.authorization.k8s.io_ClusterRoleBinding", "v1")
	fmt.Printf("%s/%s %s %q %q\n", e.Group, e.Version, e.Kind, e.Namespace, e.Name)
	// Output: rbac.authorization.k8s.io/v1 ClusterRoleBinding "" "system:auth-delegator"
}
