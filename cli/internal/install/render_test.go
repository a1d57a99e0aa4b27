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

// An API server at an address and port the egress policies do not open,
// and a DNS that is not a kube-dns Pod, are added to render-controller's
// and the UI's egress as rules of their own; deploy/'s rules stay, and no
// other policy changes.
func TestAPIServerEndpointsAndClusterDNSOpenTheEgressPolicies(t *testing.T) {
	o := DefaultOptions("v2.0.0")
	o.ComponentsExtra = []string{"ui"}
	base, err := Render(o)
	if err != nil {
		t.Fatal(err)
	}
	o.APIServerEndpoints = []string{"10.244.0.1:37123", "[fd00::1]:6443"}
	o.ClusterDNS = []string{"169.254.20.10"}
	objs, err := Render(o)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ports:\n- port: 37123\n  protocol: TCP\nto:\n- ipBlock:\n    cidr: 10.244.0.1/32\n",
		"ports:\n- port: 6443\n  protocol: TCP\nto:\n- ipBlock:\n    cidr: fd00::1/128\n",
		"ports:\n- port: 53\n  protocol: UDP\n- port: 53\n  protocol: TCP\nto:\n- ipBlock:\n    cidr: 169.254.20.10/32\n",
	}
	for _, u := range objs {
		if u.GetKind() != "NetworkPolicy" {
			continue
		}
		before, _, _ := unstructured.NestedSlice(find(base, "NetworkPolicy", u.GetName()).Object, "spec", "egress")
		after, _, _ := unstructured.NestedSlice(u.Object, "spec", "egress")
		if !slices.Contains(egressPolicies, u.GetName()) {
			if len(after) != len(before) {
				t.Errorf("%s: %d egress rules, want deploy/'s %d", u.GetName(), len(after), len(before))
			}
			continue
		}
		if len(after) != len(before)+len(want) {
			t.Fatalf("%s: %d egress rules, want deploy/'s %d and %d more", u.GetName(), len(after), len(before), len(want))
		}
		for i, w := range want {
			got, err := yaml.Marshal(after[len(before)+i])
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != w {
				t.Errorf("%s: added rule %d is\n%s\nwant\n%s", u.GetName(), i, got, w)
			}
		}
	}
	for _, name := range egressPolicies {
		if find(objs, "NetworkPolicy", name) == nil {
			t.Errorf("no NetworkPolicy %s", name)
		}
	}
}

func TestBadAPIServerEndpointsAndClusterDNSAreRefused(t *testing.T) {
	for _, tc := range []struct {
		set  func(*Options)
		want string
	}{
		{func(o *Options) { o.APIServerEndpoints = []string{"10.244.0.1"} }, `API server endpoint "10.244.0.1"`},
		{func(o *Options) { o.APIServerEndpoints = []string{"kubernetes:443"} }, `API server endpoint "kubernetes:443"`},
		{func(o *Options) { o.ClusterDNS = []string{"10.0.0.0/8"} }, `cluster DNS "10.0.0.0/8"`},
		{func(o *Options) { o.ClusterDNS, o.NetworkPolicy = []string{"169.254.20.10"}, false }, "no NetworkPolicy is installed"},
	} {
		o := DefaultOptions("v2.0.0")
		tc.set(&o)
		if _, err := Render(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Render: %v, want an error with %q", err, tc.want)
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
