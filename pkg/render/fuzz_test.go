package render

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// fuzzLimits keep each input cheap; fuzzAllocBound is what one build may
// allocate before it counts as a runaway (kustomize allocates about a
// kilobyte per node, so the node budget bounds it well below this).
var fuzzLimits = Limits{MaxInputBytes: 1 << 20, MaxNodes: 20_000, MaxDocuments: 500, MaxOutputBytes: 1 << 20}

const fuzzAllocBound = 512 << 20

// FuzzBuild renders a hostile source of three files (a kustomization, a
// resource or builtin config, and a patch) through a spec patch: the
// build must not panic, never reach the network, stay within its
// allocation bound, and either render or fail with one of Build's
// reasons.
func FuzzBuild(f *testing.F) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leaked\n")
	}))
	defer srv.Close()
	url := srv.URL + "/x.yaml"
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  k: v\n"
	seeds := [][3]string{
		{kustomizationHeader + "resources:\n- cm.yaml\n", cm, ""},
		{kustomizationHeader + "generators:\n- cm.yaml\n", "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: g\nfiles:\n- leaked=" + url + "\n", ""},
		{kustomizationHeader + "generators:\n- |\n  apiVersion: builtin\n  kind: SecretGenerator\n  metadata:\n    name: g\n  envs:\n  - " + url + "\n", cm, ""},
		{kustomizationHeader + "resources:\n- cm.yaml\ntransformers:\n- patch.yaml\n", cm, "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\npath: " + url + "\n"},
		{kustomizationHeader + "resources:\n- cm.yaml\npatches:\n- path: patch.yaml\n", cm, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  k: patched\n"},
		{kustomizationHeader + "resources:\n- cm.yaml\n- git@127.0.0.1/org/repo\n", cm, ""},
		{kustomizationHeader + "resources:\n- cm.yaml\n", aliasBomb(7), ""},
		{kustomizationHeader + "resources:\n- cm.yaml\nreplacements:\n- path: patch.yaml\n", cm, "- source: {kind: ConfigMap, name: cm, fieldPath: data.k}\n  targets:\n  - select: {kind: ConfigMap}\n    fieldPaths: [metadata.annotations.k]\n"},
		{"", cm + "---\n" + cm, ""},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2], "")
	}
	f.Add(kustomizationHeader+"resources:\n- cm.yaml\n", cm, "", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  k: &a [*a]\n")

	f.Fuzz(func(t *testing.T, kustomization, resource, patch, specPatch string) {
		work := t.TempDir()
		files := map[string]string{"cm.yaml": resource, "patch.yaml": patch}
		if kustomization != "" {
			files["kustomization.yaml"] = kustomization
		}
		writeTree(t, SourceDir(work), files)
		spec := &kustomizev1.KustomizationSpec{}
		if specPatch != "" {
			spec.Patches = []kustomizev1.Patch{{Patch: specPatch}}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		before := allocated()
		res, err := Build(ctx, work, spec, Options{Limits: fuzzLimits})
		if grown := allocated() - before; grown > fuzzAllocBound {
			t.Fatalf("one build allocated %d MiB", grown>>20)
		}
		if n := hits.Load(); n > 0 {
			t.Fatalf("rendering reached the network (%d requests)", n)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("an error without a reason: %v", err)
			}
			return
		}
		if int64(len(res.Manifests)) > fuzzLimits.MaxOutputBytes {
			t.Fatalf("rendered %d bytes, over the limit", len(res.Manifests))
		}
		runtime.KeepAlive(res)
	})
}

// fastGenKinds is how many of genKinds, the first, the fast path takes.
const fastGenKinds = 15

// genKinds are the objects generated trees are made of: each fast kind,
// one with local config, one with a container in a field the image
// transformer rewrites wherever it is found, the referrers the fast path
// takes (a ServiceAccount with a pull Secret, and every workload kind,
// their Pod templates naming the generated objects by the generated names
// so that the name-reference step has referrals to find and a prefix has
// references to follow), and then objects it refuses (a RoleBinding, whose
// subjects the step completes; a Deployment whose ServiceAccount name is
// a mapping; an Ingress).
var genKinds = []func(name, namespace string) string{
	func(n, ns string) string { return genMeta("v1", "ConfigMap", n, ns, "") + "data:\n  k: v\n" },
	func(n, ns string) string { return genMeta("v1", "Secret", n, ns, "") + "stringData:\n  k: v\n" },
	func(n, ns string) string {
		return genMeta("v1", "Service", n, ns, "") + "spec:\n  ports:\n  - port: 80\n"
	},
	func(n, ns string) string { return genMeta("v1", "ServiceAccount", n, ns, "") },
	func(n, ns string) string { return genMeta("v1", "Namespace", n, ns, "") },
	func(n, ns string) string {
		return genMeta("v1", "ConfigMap", n, ns, "  annotations:\n    config.kubernetes.io/local-config: \"true\"\n")
	},
	func(n, ns string) string {
		return genMeta("v1", "ConfigMap", n, ns, "") + "data:\n  containers:\n  - name: c\n    image: nginx:1\n"
	},
	func(n, ns string) string {
		return genMeta("v1", "ServiceAccount", n, ns, "") + "imagePullSecrets:\n- name: " + n + "\n"
	},
	func(n, ns string) string {
		return genWorkload("apps/v1", "Deployment", n, ns, "spec:\n  template:\n", genPodSpec(n))
	},
	func(n, ns string) string {
		return genWorkload("apps/v1", "StatefulSet", n, ns, "spec:\n  serviceName: "+n+"\n  template:\n", genPodSpec(n))
	},
	func(n, ns string) string {
		return genWorkload("apps/v1", "DaemonSet", n, ns, "spec:\n  template:\n", genPodSpec(n))
	},
	func(n, ns string) string {
		return genWorkload("apps/v1", "ReplicaSet", n, ns, "spec:\n  template:\n", genPodSpec(n))
	},
	func(n, ns string) string {
		return genWorkload("batch/v1", "CronJob", n, ns, "spec:\n  schedule: '@daily'\n  jobTemplate:\n    spec:\n      template:\n", genPodSpec(n))
	},
	func(n, ns string) string {
		return genWorkload("batch/v1", "Job", n, ns, "spec:\n  template:\n", genPodSpec(n))
	},
	func(n, ns string) string { return genWorkload("v1", "Pod", n, ns, "", genPodSpec(n)) },
	func(n, ns string) string {
		return genMeta("rbac.authorization.k8s.io/v1", "RoleBinding", n, ns, "") +
			"roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: view\nsubjects:\n- kind: ServiceAccount\n  name: " + n + "\n"
	},
	func(n, ns string) string {
		return genWorkload("apps/v1", "Deployment", n, ns, "spec:\n  template:\n", "serviceAccountName: {name: "+n+"}\ncontainers:\n- name: c\n  image: nginx:1\n")
	},
	func(n, ns string) string {
		return genMeta("networking.k8s.io/v1", "Ingress", n, ns, "") + "spec:\n  defaultBackend:\n    service: {name: " + n + ", port: {number: 80}}\n"
	},
}

// genWorkload writes a workload: its head, the fields above its Pod
// template's spec (above, whose last line is the template's), and the
// Pod spec a level below that line; a Pod's spec is at the top.
func genWorkload(apiVersion, kind, name, namespace, above, podSpec string) string {
	pad := ""
	if above != "" {
		lines := strings.Split(strings.TrimSuffix(above, "\n"), "\n")
		last := lines[len(lines)-1]
		pad = strings.Repeat(" ", len(last)-len(strings.TrimLeft(last, " "))+2)
	}
	return genMeta(apiVersion, kind, name, namespace, "") + above + pad + "spec:\n" + indent(podSpec, pad+"  ")
}

// genPodSpec is a Pod spec that names the generated objects called name
// (a ConfigMap, a Secret, a ServiceAccount) and runs the images genImages
// rewrite, in a container and an init container.
func genPodSpec(name string) string {
	return "serviceAccountName: " + name + "\nimagePullSecrets:\n- name: " + name + "\n" +
		"initContainers:\n- name: i\n  image: busybox\n" +
		"containers:\n- name: c\n  image: " + genImageValues[max(slices.Index(genNames, name), 0)%len(genImageValues)] + "\n  envFrom:\n  - configMapRef:\n      name: " + name + "\n  env:\n  - name: S\n    valueFrom:\n      secretKeyRef: {name: " + name + ", key: k}\n" +
		"volumes:\n- name: v\n  secret: {secretName: " + name + "}\n"
}

// genMeta writes an object's head; objects of the first half of
// genNames carry a label for label selectors to find.
func genMeta(apiVersion, kind, name, namespace, extra string) string {
	s := "apiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata:\n  name: " + name + "\n"
	if namespace != "" {
		s += "  namespace: " + namespace + "\n"
	}
	if slices.Index(genNames, name) < len(genNames)/2 {
		s += "  labels:\n    app: " + name + "\n"
	}
	return s + extra
}

// genNames and genNamespaces are few, so that generated objects collide
// (duplicates, and conflicts a target namespace makes) and a Namespace
// object's name meets the target.
var (
	genNames      = []string{"a", "b", "c", "d", "e", "f", "default", "t"}
	genNamespaces = []string{"", "default", "a", "t"}
	genTargets    = []string{"", "t", "default", "a", "other"}
)

// genImages are the images a generated spec may set: a tag, a digest, a
// new name, a new name with a tag, one no object uses, a tag and a
// digest, a new name that is the name, registries with a port, a name whose dot
// matches any character (kustomize matches names as regular
// expressions), and one that is more of an expression than dots, which
// the fast path leaves to kustomize's own code.
var genImages = []kustomizev1.Image{
	{Name: "nginx", NewTag: "2"},
	{Name: "nginx", Digest: "sha256:" + strings.Repeat("ab", 32)},
	{Name: "nginx", NewName: "registry.example/nginx"},
	{Name: "nginx", NewName: "registry.example/web", NewTag: "3"},
	{Name: "busybox", NewTag: "1.36"},
	{Name: "localhost:5000/nginx", NewTag: "5", Digest: "sha256:00"},
	{Name: "registry.example/nginx", Digest: "sha512:" + strings.Repeat("ef", 64)},
	{Name: "nginx", NewName: "nginx"},
	{Name: "registry.example/app", NewName: "r.example:5000/app"},
	{Name: "busybox|nginx", NewTag: "7"},
}

// genImageValues are the images of generated Pod specs, by the index
// of their name in genNames: tags, digests, registries with ports, a
// name genImages' dotted name matches by its dot, and none.
var genImageValues = []string{
	"nginx:1", "nginx", "localhost:5000/nginx:1@sha256:ab", "registry.example/nginx:2", "registryXexample/app",
	"registry.example/app@sha512:" + strings.Repeat("cd", 64), "nginx:1.2@sha256:", "busybox:1.36-musl",
}

// genPatches are the patches a generated spec may set: JSON 6902 and
// strategic-merge, with targets by kind, name, namespace, label and
// annotation selectors and without, and ones the fast path must refuse
// or kustomize rejects (a rename, a referring field, no target for a JSON
// patch, a patch of no object).
var genPatches = []kustomizev1.Patch{
	{Patch: "- op: add\n  path: /metadata/labels\n  value: {p: x}\n", Target: &kustomizev1.Selector{Kind: "ConfigMap"}},
	{Patch: `[{"op": "add", "path": "/metadata/annotations", "value": {"patched": "true"}}]`, Target: &kustomizev1.Selector{Name: "a|b|c"}},
	{Patch: "- op: replace\n  path: /metadata/labels/app\n  value: z\n", Target: &kustomizev1.Selector{LabelSelector: "app in (a,b)"}},
	{Patch: "- op: replace\n  path: /metadata/name\n  value: renamed\n", Target: &kustomizev1.Selector{Kind: "Secret"}},
	{Patch: "- op: add\n  path: /data/k2\n  value: v2\n", Target: &kustomizev1.Selector{Kind: "ConfigMap", Namespace: "a"}},
	{Patch: "- op: add\n  path: /data/k2\n  value: v2\n"},
	{Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: patched\n"},
	{Patch: "apiVersion: v1\nkind: Service\nmetadata:\n  name: b\n  namespace: a\nspec:\n  type: NodePort\n"},
	{Patch: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: b\n  namespace: default\nstringData:\n  k2: v2\n"},
	{Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels:\n    added: \"yes\"\n"},
	{Patch: "apiVersion: v1\nkind: Service\nmetadata:\n  name: any\nspec:\n  ports:\n  - port: 80\n    name: http\n", Target: &kustomizev1.Selector{Kind: "Service"}},
	{Patch: "$patch: delete\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n", Target: &kustomizev1.Selector{Kind: "ConfigMap", Name: "b"}},
	{Patch: "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: any\nimagePullSecrets:\n- name: pull\n", Target: &kustomizev1.Selector{Kind: "ServiceAccount"}},
	{Patch: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: any\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n", Target: &kustomizev1.Selector{Kind: "Secret", Name: "[a-d]"}},
	{Patch: "- op: add\n  path: /metadata/labels/seen\n  value: \"yes\"\n", Target: &kustomizev1.Selector{AnnotationSelector: "patched=true"}},
	{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: any\nspec:\n  replicas: 2\n", Target: &kustomizev1.Selector{Kind: "Deployment"}},
	{Patch: "- op: add\n  path: /metadata/annotations/config.kubernetes.io~1local-config\n  value: \"true\"\n", Target: &kustomizev1.Selector{Kind: "Service", Name: "c"}},
	{Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels:\n    app: c\n", Target: &kustomizev1.Selector{Version: "v1", Name: "c"}},
	// Patches of workloads: strategic merges by the schema's merge keys
	// (a container's name), a deleted container, a volume that names a
	// ConfigMap, an image by JSON 6902, and a name reference made a
	// mapping (which the fast path refuses).
	{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: any\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        env:\n        - {name: E, value: v}\n        resources:\n          limits: {memory: 64Mi}\n", Target: &kustomizev1.Selector{Kind: "Deployment"}},
	{Patch: "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: any\nspec:\n  template:\n    spec:\n      initContainers:\n      - name: i\n        $patch: delete\n      containers:\n      - name: c2\n        image: busybox\n", Target: &kustomizev1.Selector{Group: "apps", LabelSelector: "app"}},
	{Patch: "- op: add\n  path: /spec/template/spec/volumes/-\n  value: {name: cm, configMap: {name: a}}\n", Target: &kustomizev1.Selector{Kind: "Deployment|DaemonSet|Job"}},
	{Patch: "- op: replace\n  path: /spec/template/spec/containers/0/image\n  value: busybox:1\n", Target: &kustomizev1.Selector{Group: "apps", Name: "[a-d]"}},
	{Patch: `[{"op": "add", "path": "/spec/template/spec/serviceAccountName", "value": {"name": "a"}}]`, Target: &kustomizev1.Selector{Kind: "DaemonSet"}},
	{Patch: "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: any\nspec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          containers:\n          - name: c\n            image: nginx:9\n", Target: &kustomizev1.Selector{Kind: "CronJob"}},
}

// genTree makes a source tree and a spec from data: each three bytes an
// object (its kind, name, namespace and file, out of three files), and
// the last three bytes for the spec: its target namespace (target
// overrides it when set), a kustomization file listing the files, a name
// prefix and suffix, images, up to two patches, and commonMetadata with
// substitution.
func genTree(data []byte, target string) (map[string]string, kustomizev1.KustomizationSpec) {
	files := map[string]string{}
	names := []string{"a.yaml", "b.yaml", "sub/c.yaml"}
	byID := kustomizev1.Patch{}
	for i := 0; i+2 < len(data) && i < 90; i += 3 {
		// Fifteen in sixteen objects of a kind the fast path takes.
		k := int(data[i])
		if k%16 < 15 {
			k %= fastGenKinds
		} else {
			k = fastGenKinds + (k/16)%(len(genKinds)-fastGenKinds)
		}
		kind := genKinds[k]
		name, ns := genNames[int(data[i+1])%len(genNames)], genNamespaces[int(data[i+1]/8)%len(genNamespaces)]
		obj := kind(name, ns)
		if byID.Patch == "" && (k < 4 || k == 8) {
			// A strategic-merge patch of this object by its id (a
			// ConfigMap, Secret, Service, ServiceAccount or Deployment):
			// its kind is in its head.
			head := strings.SplitN(obj, "\n", 3)
			byID.Patch = head[0] + "\n" + head[1] + "\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\n  annotations:\n    by-id: \"yes\"\n"
		}
		file := names[int(data[i+2])%len(names)]
		if files[file] != "" {
			files[file] += "---\n"
		}
		files[file] += obj
	}
	var flags, more, patches byte
	if len(data) > 0 {
		flags = data[len(data)-1]
	}
	if len(data) > 1 {
		more = data[len(data)-2]
	}
	if len(data) > 2 {
		patches = data[len(data)-3]
	}
	spec := kustomizev1.KustomizationSpec{TargetNamespace: genTargets[int(flags)%len(genTargets)]}
	if target != "" {
		spec.TargetNamespace = target
	}
	if flags&0x08 != 0 {
		var listed []string
		for _, n := range names {
			if files[n] != "" {
				listed = append(listed, "- "+n+"\n")
			}
		}
		files["kustomization.yaml"] = kustomizationHeader + "resources:\n" + strings.Join(listed, "")
	}
	if flags&0x10 != 0 {
		spec.NamePrefix = "p-"
	}
	if flags&0x20 != 0 {
		spec.NameSuffix = "-s"
	}
	// Images: none half the time, else one or two.
	if more&1 != 0 {
		spec.Images = append(spec.Images, genImages[int(more>>1)%len(genImages)])
		if more&0x80 != 0 {
			spec.Images = append(spec.Images, genImages[int(more>>4)%len(genImages)])
		}
	}
	// Patches: none a quarter of the time, else one or two.
	pick := func(b byte) kustomizev1.Patch {
		// The patch by id one time in four.
		if b%4 != 0 || byID.Patch == "" {
			return genPatches[int(b/4)%len(genPatches)]
		}
		return byID
	}
	if patches%4 != 0 {
		// Mixed with the images' byte, so that every patch is picked.
		spec.Patches = append(spec.Patches, pick(patches>>2^more))
		if patches%4 == 3 {
			spec.Patches = append(spec.Patches, pick(patches>>4^more<<3))
		}
	}
	if flags&0x80 != 0 {
		spec.CommonMetadata = &kustomizev1.CommonMetadata{Labels: map[string]string{"team": "a"}}
		spec.PostBuild = &kustomizev1.PostBuild{}
	}
	return files, spec
}

// FuzzFastPathGenerated compares the fast path with kustomize on trees
// and specs generated from the fuzzer's bytes (genTree) and a fuzzed
// target namespace: any difference is a bug in the fast path.
func FuzzFastPathGenerated(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 0, 4, 4, 1, 1}, "")
	f.Add([]byte{0, 0, 0, 0, 8, 1, 4, 0, 2, 4, 1, 0, 9}, "")
	f.Add([]byte{5, 2, 0, 0, 10, 1, 7, 3, 2, 8, 4, 0, 0x81}, "t")
	f.Add([]byte{0, 0, 0, 0, 1, 1}, "a-namespace")
	f.Fuzz(func(t *testing.T, data []byte, target string) {
		files, spec := genTree(data, target)
		if len(files) == 0 {
			return
		}
		work := t.TempDir()
		writeTree(t, SourceDir(work), files)
		opts := Options{Limits: fuzzLimits}
		slow, fast, _ := buildBothWays(t, work, &spec, opts)
		compareOutcomes(t, slow, fast)
	})
}

// TestFastPathEqualsKustomizeGenerated is FuzzFastPathGenerated's check
// over a fixed set of generated trees and specs, in every run; it also
// requires that both paths were taken often, and the fast path with each
// overlay field it does (genFeatures), so that it compared the fast path
// with kustomize and not kustomize with itself.
func TestFastPathEqualsKustomizeGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(46, 1))
	var took, compared int
	tookWith := map[string]int{}
	for i := range 300 {
		data := make([]byte, 3+rng.IntN(10)*3+1)
		for j := range data {
			data[j] = byte(rng.UintN(256))
		}
		files, spec := genTree(data, "")
		work := t.TempDir()
		writeTree(t, SourceDir(work), files)
		slow, fast, fastTaken := buildBothWays(t, work, &spec, Options{Limits: fuzzLimits})
		if !reflect.DeepEqual(slow, fast) {
			t.Fatalf("tree %d (%v, spec %+v): the fast path differs from kustomize:\nkustomize: %s\nfast path: %s",
				i, files, spec, describeOutcome(slow), describeOutcome(fast))
		}
		compared++
		if fastTaken {
			took++
			features := genFeatures(&spec)
			for _, f := range features {
				tookWith[f]++
			}
			if genHasWorkload(files) {
				tookWith["workload"]++
				for _, f := range features {
					tookWith["workload and "+f]++
				}
			}
		}
	}
	if took < 15 || compared-took < 15 {
		t.Fatalf("the fast path took %d of %d trees: want both paths taken at least 15 times", took, compared)
	}
	for _, f := range []string{"targetNamespace", "namePrefix", "nameSuffix", "images", "JSON 6902 patch", "strategic-merge patch with a target", "strategic-merge patch without a target",
		"workload", "workload and targetNamespace", "workload and images", "workload and JSON 6902 patch", "workload and strategic-merge patch with a target", "workload and strategic-merge patch without a target"} {
		if tookWith[f] < 3 {
			t.Errorf("the fast path took %d trees with a %s, want at least 3", tookWith[f], f)
		}
	}
	t.Logf("the fast path took %d of %d generated trees; by field: %v", took, compared, tookWith)
}

// genHasWorkload reports whether a generated tree holds a workload (a
// referrer with a Pod template) of a kind the fast path takes.
func genHasWorkload(files map[string]string) bool {
	for _, f := range files {
		for _, kind := range []string{"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "CronJob", "Job", "Pod"} {
			if strings.Contains(f, "\nkind: "+kind+"\n") {
				return true
			}
		}
	}
	return false
}

// genFeatures names the overlay fields spec sets.
func genFeatures(spec *kustomizev1.KustomizationSpec) []string {
	var out []string
	for f, set := range map[string]bool{
		"targetNamespace": spec.TargetNamespace != "",
		"namePrefix":      spec.NamePrefix != "",
		"nameSuffix":      spec.NameSuffix != "",
		"images":          len(spec.Images) > 0,
	} {
		if set {
			out = append(out, f)
		}
	}
	for _, p := range spec.Patches {
		switch {
		case strings.HasPrefix(p.Patch, "-") || strings.HasPrefix(p.Patch, "["):
			out = append(out, "JSON 6902 patch")
		case p.Target != nil:
			out = append(out, "strategic-merge patch with a target")
		default:
			out = append(out, "strategic-merge patch without a target")
		}
	}
	return out
}
