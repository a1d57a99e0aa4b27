package install

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// find returns the object of kind and name among objs, or nil.
func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func count(objs []*unstructured.Unstructured, kind string) int {
	n := 0
	for _, o := range objs {
		if o.GetKind() == kind {
			n++
		}
	}
	return n
}

// container returns the first container of a Deployment or StatefulSet.
func container(t *testing.T, u *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		t.Fatalf("%s %s has no containers", u.GetKind(), u.GetName())
	}
	return cs[0].(map[string]any)
}

func args(t *testing.T, u *unstructured.Unstructured) []string {
	var out []string
	for _, a := range container(t, u)["args"].([]any) {
		out = append(out, a.(string))
	}
	return out
}

func TestTheDefaultRenderIsDeployWithTheImagesTagged(t *testing.T) {
	objs, err := Render(DefaultOptions("v1.2.3"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range Controllers {
		d := find(objs, "Deployment", c)
		if d == nil {
			t.Fatalf("no Deployment %s", c)
		}
		if got, want := container(t, d)["image"], "ghcr.io/plumb-dev/"+c+":v1.2.3"; got != want {
			t.Errorf("%s image = %v, want %s", c, got, want)
		}
		if slices.Contains(args(t, d), "--watch-all-namespaces=false") {
			t.Errorf("%s watches one namespace by default", c)
		}
	}
	if got := container(t, find(objs, "StatefulSet", "nats"))["image"].(string); !strings.HasPrefix(got, "nats:") {
		t.Errorf("nats image = %s, want deploy/'s own", got)
	}
	if find(objs, "Deployment", "ui") != nil {
		t.Error("the ui is installed without being asked for")
	}
	if count(objs, "NetworkPolicy") == 0 || find(objs, "MutatingAdmissionPolicy", "plumb-sync-finalizer") == nil {
		t.Error("the network policies or the finalizer policy are missing")
	}
	if count(objs, "CustomResourceDefinition") < 12 || find(objs, "Namespace", Namespace) == nil {
		t.Error("the CRDs or the namespace are missing")
	}
	for _, o := range objs {
		if o.GetLabels()["app.kubernetes.io/part-of"] != "plumb" {
			t.Errorf("%s %s is not labelled part-of=plumb, which uninstall selects by", o.GetKind(), o.GetName())
		}
	}
}

func TestOptionsChooseComponentsImagesPoliciesAndTheWatchedNamespace(t *testing.T) {
	o := DefaultOptions("v2.0.0")
	o.Registry = "registry.example:5000/mirror"
	o.Components = []string{"source-controller", "sync-controller"}
	o.ComponentsExtra = []string{"ui"}
	o.NetworkPolicy = false
	o.WatchAllNamespaces = false
	o.AdmissionPolicy = false
	objs, err := Render(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"render-controller", "notification-controller"} {
		if find(objs, "Deployment", c) != nil {
			t.Errorf("%s is installed though not a component", c)
		}
	}
	for _, c := range []string{"source-controller", "sync-controller", "ui"} {
		d := find(objs, "Deployment", c)
		if d == nil {
			t.Fatalf("no Deployment %s", c)
		}
		if got, want := container(t, d)["image"], "registry.example:5000/mirror/"+c+":v2.0.0"; got != want {
			t.Errorf("%s image = %v, want %s", c, got, want)
		}
	}
	for _, c := range []string{"source-controller", "sync-controller"} {
		if !slices.Contains(args(t, find(objs, "Deployment", c)), "--watch-all-namespaces=false") {
			t.Errorf("%s args lack --watch-all-namespaces=false", c)
		}
	}
	if slices.Contains(args(t, find(objs, "Deployment", "ui")), "--watch-all-namespaces=false") {
		t.Error("the ui, which has no such flag, was given --watch-all-namespaces=false")
	}
	nats := container(t, find(objs, "StatefulSet", "nats"))["image"].(string)
	if !strings.HasPrefix(nats, "registry.example:5000/mirror/nats:") {
		t.Errorf("nats image = %s, want it from the private registry", nats)
	}
	for _, o := range objs {
		if o.GetLabels()[PartOfLabel] != PartOf {
			t.Errorf("%s %s is not labelled part-of=plumb, which uninstall selects by", o.GetKind(), o.GetName())
		}
	}
	if n := count(objs, "NetworkPolicy"); n != 0 {
		t.Errorf("%d NetworkPolicies with NetworkPolicy off", n)
	}
	if count(objs, "MutatingAdmissionPolicy")+count(objs, "MutatingAdmissionPolicyBinding") != 0 {
		t.Error("the finalizer policy is rendered with AdmissionPolicy off")
	}
}

func TestPrivateNetworksReachTheControllersThatFetch(t *testing.T) {
	o := DefaultOptions("v2.0.0")
	o.AllowedPrivateNetworks = []string{"10.244.0.1", "192.168.40.0/24"}
	objs, err := Render(o)
	if err != nil {
		t.Fatal(err)
	}
	const want = "--allowed-private-networks=10.244.0.1,192.168.40.0/24"
	for _, c := range Controllers {
		got := slices.Contains(args(t, find(objs, "Deployment", c)), want)
		if fetches := slices.Contains(privateNetworkClients, c); got != fetches {
			t.Errorf("%s: has %s = %t, want %t", c, want, got, fetches)
		}
	}
	// Without them, no controller gets the flag at all.
	objs, err = Render(DefaultOptions("v2.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range Controllers {
		for _, a := range args(t, find(objs, "Deployment", c)) {
			if strings.HasPrefix(a, "--allowed-private-networks") {
				t.Errorf("%s has %s by default", c, a)
			}
		}
	}
}

func TestYAMLParsesBackToTheSameObjects(t *testing.T) {
	objs, err := Render(DefaultOptions("v1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := YAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(data), "\n---\n")
	if len(docs) != len(objs) {
		t.Fatalf("%d documents for %d objects", len(docs), len(objs))
	}
	for i, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		if u.GetKind() != objs[i].GetKind() || u.GetName() != objs[i].GetName() {
			t.Errorf("document %d is %s %s, want %s %s", i, u.GetKind(), u.GetName(), objs[i].GetKind(), objs[i].GetName())
		}
	}
}

func TestUnknownComponentsAndBadImagesAreRefused(t *testing.T) {
	for name, mutate := range map[string]func(*Options){
		"component": func(o *Options) { o.Components = append(o.Components, "helm-controller") },
		"none":      func(o *Options) { o.Components = nil },
		"extra":     func(o *Options) { o.ComponentsExtra = []string{"image-automation"} },
		"registry":  func(o *Options) { o.Registry = "ghcr.io/x/" },
		"version":   func(o *Options) { o.Version = "v1@sha256:x" },
		"network":   func(o *Options) { o.AllowedPrivateNetworks = []string{"10.244.0.1/16"} },
		"address":   func(o *Options) { o.AllowedPrivateNetworks = []string{"git.example"} },
	} {
		o := DefaultOptions("v1.0.0")
		mutate(&o)
		if _, err := Render(o); err == nil {
			t.Errorf("%s: rendered without an error", name)
		}
	}
}
