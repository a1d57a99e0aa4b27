package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"plumb.dev/deploy"
	"plumb.dev/pkg/netguard"
)

// Namespace is where deploy/ puts the controllers, NATS and the Secret
// nats-credentials; its NetworkPolicies, RBAC subjects and NATS URL name
// it, so it is not an option.
const Namespace = "plumb-system"

// DefaultRegistry is where the release images are published, and the
// registry part of the image names deploy/ and its ui component write.
const DefaultRegistry = "ghcr.io/plumb-dev"

// Controllers are the default components, the five folders of deploy/
// that hold a controller, in the order deploy/kustomization.yaml lists
// them.
var Controllers = []string{"source-controller", "render-controller", "sync-controller", "notification-controller", "image-controller"}

// Extras are the components installed only when asked for: each a
// kustomize component under deploy/components.
var Extras = []string{"ui"}

// Options say what Render renders. The zero value is not useful: start
// from DefaultOptions.
type Options struct {
	// Registry replaces DefaultRegistry in every image of Plumb's
	// programs; a registry other than the default also serves NATS
	// (<registry>/nats:<its tag>), for an air-gapped install that
	// mirrors every image into one place.
	Registry string
	// Version is the tag of Plumb's images.
	Version string
	// Components are the controllers to install (a subset of
	// Controllers); NATS, the CRDs and the namespace always come.
	Components []string
	// ComponentsExtra are the extras to add (a subset of Extras).
	ComponentsExtra []string
	// NetworkPolicy keeps the NetworkPolicies (network-policies/ and the
	// ones components add); false leaves every one out.
	NetworkPolicy bool
	// WatchAllNamespaces false starts every controller with
	// --watch-all-namespaces=false: each reconciles only the objects in
	// Namespace.
	WatchAllNamespaces bool
	// AdmissionPolicy keeps sync-controller's MutatingAdmissionPolicy and
	// its binding, which need Kubernetes 1.36; false leaves them out, and
	// sync-controller adds its finalizer itself (deploy/README.md).
	AdmissionPolicy bool
	// AllowedPrivateNetworks are the private networks (CIDRs or single
	// addresses) of the Git servers and registries Plumb may reach,
	// passed to the controllers that fetch from them as
	// --allowed-private-networks (PrivateNetworksPatch); empty, deploy/'s
	// controllers reach no private address (deploy/README.md,
	// "Addresses").
	AllowedPrivateNetworks []string
	// APIServerEndpoints are the API server's addresses and ports as the
	// cluster's `kubernetes` EndpointSlice names them (IP:port), for a
	// cluster where they are not a private address on 443 or 6443, the
	// ones deploy/'s egress policies open: render-controller's (and the
	// UI's) egress policy lets it reach each of them too (EgressPatch).
	// Needs NetworkPolicy.
	APIServerEndpoints []string
	// ClusterDNS are the addresses of DNS servers the Pods ask that are
	// not kube-system's kube-dns Pods (NodeLocal DNSCache's 169.254.20.10,
	// a DNS on the node): the egress policies let port 53 through to them
	// too. Needs NetworkPolicy.
	ClusterDNS []string
}

// DefaultOptions are what `kubectl apply -k deploy/` installs, with the
// images tagged version.
func DefaultOptions(version string) Options {
	return Options{
		Registry:           DefaultRegistry,
		Version:            version,
		Components:         slices.Clone(Controllers),
		NetworkPolicy:      true,
		WatchAllNamespaces: true,
		AdmissionPolicy:    true,
	}
}

// Validate reports options Render cannot honour.
func (o Options) Validate() error {
	var errs []error
	if len(o.Components) == 0 {
		errs = append(errs, errors.New("no components: name at least one of "+strings.Join(Controllers, ", ")))
	}
	for _, c := range o.Components {
		if !slices.Contains(Controllers, c) {
			errs = append(errs, fmt.Errorf("unknown component %q: the components are %s", c, strings.Join(Controllers, ", ")))
		}
	}
	for _, c := range o.ComponentsExtra {
		if !slices.Contains(Extras, c) {
			errs = append(errs, fmt.Errorf("unknown extra component %q: the extras are %s", c, strings.Join(Extras, ", ")))
		}
	}
	if o.Registry == "" || strings.ContainsAny(o.Registry, " \t\n@") || strings.HasSuffix(o.Registry, "/") {
		errs = append(errs, fmt.Errorf("registry %q: want a host and path such as %s or localhost:5000/plumb", o.Registry, DefaultRegistry))
	}
	if o.Version == "" || strings.ContainsAny(o.Version, " /:@") {
		errs = append(errs, fmt.Errorf("version %q: want an image tag such as v1.2.3", o.Version))
	}
	// Refused here, not in a Pod that would crash on it later.
	if _, err := netguard.ParseNetworks(o.AllowedPrivateNetworks); err != nil {
		errs = append(errs, fmt.Errorf("allowed private networks: %w", err))
	}
	for _, ep := range o.APIServerEndpoints {
		if _, err := netip.ParseAddrPort(ep); err != nil {
			errs = append(errs, fmt.Errorf("API server endpoint %q: want an address and port as the kubernetes EndpointSlice names them, such as 172.18.0.2:6443", ep))
		}
	}
	for _, dns := range o.ClusterDNS {
		if _, err := netip.ParseAddr(dns); err != nil {
			errs = append(errs, fmt.Errorf("cluster DNS %q: want an IP address, such as 169.254.20.10", dns))
		}
	}
	if !o.NetworkPolicy && (len(o.APIServerEndpoints) > 0 || len(o.ClusterDNS) > 0) {
		errs = append(errs, errors.New("API server endpoints and cluster DNS open the NetworkPolicies' egress, and no NetworkPolicy is installed"))
	}
	return errors.Join(errs...)
}

// Render builds deploy/, as carried in this binary, for the options: the
// same kustomize build as `kubectl apply -k deploy/` with the controllers
// left out that are not among o.Components, the extras added as the
// components they are, and the images, flags and policies the options
// name. The objects come in kustomize's order (namespaces and CRDs
// first).
func Render(o Options) ([]*unstructured.Unstructured, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	mem := filesys.MakeFsInMemory()
	if err := copyTree(deploy.FS, mem, "/deploy"); err != nil {
		return nil, err
	}
	if err := trimBase(mem, o); err != nil {
		return nil, err
	}
	overlay, err := overlayFor(o)
	if err != nil {
		return nil, err
	}
	if err := mem.WriteFile("/install/kustomization.yaml", overlay); err != nil {
		return nil, err
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/install")
	if err != nil {
		return nil, fmt.Errorf("rendering deploy/: %w", err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range res.Resources() {
		// Through JSON, so numbers are what the API machinery expects.
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return nil, err
		}
		if dropped(u, o) {
			continue
		}
		objs = append(objs, u)
	}
	return objs, nil
}

// dropped says whether the options leave u out after the build: the
// NetworkPolicies of components come with the component, so they are
// taken out here rather than in the kustomization.
func dropped(u *unstructured.Unstructured, o Options) bool {
	switch u.GetKind() {
	case "NetworkPolicy":
		return !o.NetworkPolicy
	case "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding":
		return !o.AdmissionPolicy
	}
	return false
}

// copyTree writes every file of src under dir in dst.
func copyTree(src fs.FS, dst filesys.FileSystem, dir string) error {
	return fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		full := path.Join(dir, p)
		if err := dst.MkdirAll(path.Dir(full)); err != nil {
			return err
		}
		return dst.WriteFile(full, data)
	})
}

// trimBase rewrites the in-memory copy of deploy/kustomization.yaml's
// resources: the controllers not chosen and, without NetworkPolicy,
// network-policies/ are left out. Everything else in it stays as the
// repository has it.
func trimBase(mem filesys.FileSystem, o Options) error {
	const file = "/deploy/kustomization.yaml"
	data, err := mem.ReadFile(file)
	if err != nil {
		return err
	}
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil {
		return fmt.Errorf("deploy/kustomization.yaml: %w", err)
	}
	resources, _ := k["resources"].([]any)
	var kept []any
	for _, r := range resources {
		name, _ := r.(string)
		switch {
		case slices.Contains(Controllers, name) && !slices.Contains(o.Components, name):
			continue
		case name == "network-policies" && !o.NetworkPolicy:
			continue
		}
		kept = append(kept, r)
	}
	k["resources"] = kept
	out, err := yaml.Marshal(k)
	if err != nil {
		return err
	}
	return mem.WriteFile(file, out)
}

// programs are the images Plumb publishes, as deploy/ and its components
// name them before the overlay retags them.
var programs = []string{"source-controller", "render-controller", "sync-controller", "notification-controller", "image-controller", "ui"}

// natsImage is the image name of deploy/nats/statefulset.yaml, without
// its tag (which the overlay keeps).
const natsImage = "nats"

// overlayFor writes the kustomization that installs: deploy/ (trimmed),
// the extras, the images and the namespace-only flag.
func overlayFor(o Options) ([]byte, error) {
	k := map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"resources":  []string{"../deploy"},
		// deploy/ labels its own objects; the extras' get the label here,
		// so that uninstall finds every object the install made.
		"labels": []map[string]any{{"pairs": map[string]string{PartOfLabel: PartOf}, "includeSelectors": false}},
	}
	var components []string
	for _, c := range o.ComponentsExtra {
		components = append(components, "../deploy/components/"+c)
	}
	if len(components) > 0 {
		k["components"] = components
	}
	var images []map[string]string
	for _, p := range programs {
		images = append(images, map[string]string{
			"name":    DefaultRegistry + "/" + p,
			"newName": o.Registry + "/" + p,
			"newTag":  o.Version,
		})
	}
	if o.Registry != DefaultRegistry {
		images = append(images, map[string]string{"name": natsImage, "newName": o.Registry + "/" + natsImage})
	}
	k["images"] = images
	var patches []map[string]any
	if !o.WatchAllNamespaces {
		patches = append(patches, argPatch(Controllers, "--watch-all-namespaces=false"))
	}
	if p := PrivateNetworksPatch(o); p != nil {
		patches = append(patches, p)
	}
	if p := EgressPatch(o); p != nil {
		patches = append(patches, p)
	}
	if len(patches) > 0 {
		k["patches"] = patches
	}
	return yaml.Marshal(k)
}

// privateNetworkClients are the controllers that reach Git servers and
// registries (sync-controller: the pull request APIs of ObjectSets), each
// checking their addresses against its --allowed-private-networks.
var privateNetworkClients = []string{"source-controller", "image-controller", "sync-controller"}

// PrivateNetworksPatch is the kustomize patch that passes
// o.AllowedPrivateNetworks to the controllers reaching Git servers and
// registries, or nil when there are none. Install renders deploy/ with
// it; bootstrap writes it into the repository's kustomization instead,
// where it stays a line of Git that Plumb applies to itself, that a
// commit can change and bootstrap run again rewrites.
func PrivateNetworksPatch(o Options) map[string]any {
	if len(o.AllowedPrivateNetworks) == 0 {
		return nil
	}
	return argPatch(privateNetworkClients, "--allowed-private-networks="+strings.Join(o.AllowedPrivateNetworks, ","))
}

// egressPolicies are deploy/'s NetworkPolicies that let their Pods reach
// the API server and DNS and nothing they do not name.
var egressPolicies = []string{"render-controller-egress", "ui-egress"}

// EgressPatch is the kustomize patch that adds to the egress policies a
// rule per o.APIServerEndpoints (its address, its TCP port) and per
// o.ClusterDNS (its address, port 53 over UDP and TCP), or nil when there
// are none. deploy/'s own rules stay: the private ranges on 443 and 6443,
// and the kube-dns Pods.
func EgressPatch(o Options) map[string]any {
	type port struct {
		Port     uint16 `json:"port"`
		Protocol string `json:"protocol"`
	}
	var ops []map[string]any
	add := func(addr netip.Addr, ports ...port) {
		ops = append(ops, map[string]any{"op": "add", "path": "/spec/egress/-", "value": map[string]any{
			"to":    []map[string]any{{"ipBlock": map[string]string{"cidr": netip.PrefixFrom(addr, addr.BitLen()).String()}}},
			"ports": ports,
		}})
	}
	for _, ep := range o.APIServerEndpoints {
		if ap, err := netip.ParseAddrPort(ep); err == nil { // Validate refused the others
			add(ap.Addr(), port{ap.Port(), "TCP"})
		}
	}
	for _, dns := range o.ClusterDNS {
		if addr, err := netip.ParseAddr(dns); err == nil {
			add(addr, port{53, "UDP"}, port{53, "TCP"})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	patch, _ := yaml.Marshal(ops) // maps, strings and numbers always encode
	return map[string]any{
		"target": map[string]string{"kind": "NetworkPolicy", "name": "^(" + strings.Join(egressPolicies, "|") + ")$"},
		"patch":  string(patch),
	}
}

// argPatch is a JSON patch adding arg to the first container of the
// named controllers' Deployments (the controller itself, in deploy/).
func argPatch(deployments []string, arg string) map[string]any {
	value, _ := json.Marshal(arg) // a string always encodes
	return map[string]any{
		"target": map[string]string{"kind": "Deployment", "name": "^(" + strings.Join(deployments, "|") + ")$"},
		"patch":  "- op: add\n  path: /spec/template/spec/containers/0/args/-\n  value: " + string(value) + "\n",
	}
}

// YAML writes objs as one multi-document YAML stream, in their order:
// what `plumb install --export` prints and what bootstrap commits.
func YAML(objs []*unstructured.Unstructured) ([]byte, error) {
	var b strings.Builder
	for i, u := range objs {
		if i > 0 {
			b.WriteString("---\n")
		}
		data, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
		b.Write(data)
	}
	return []byte(b.String()), nil
}
