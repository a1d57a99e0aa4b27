package render

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/api/konfig"
	kusttest_test "sigs.k8s.io/kustomize/api/testutils/kusttest"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// fastCase is one input of the differential test: a source tree, a spec,
// and whether the fast path must take it (-1: either).
type fastCase struct {
	name  string
	dir   string            // a testdata folder, or
	files map[string]string // a tree written for the case
	links map[string]string // and its symbolic links, name to target
	spec  kustomizev1.KustomizationSpec
	opts  Options
	fast  int
}

const (
	cmA = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: apps\ndata:\n  k: v\n"
	cmB = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: apps\ndata:\n  k: v\n"
)

var fastCases = []fastCase{
	{name: "testdata plain/apps/db (JSON, a values file skipped)", dir: "plain", spec: kustomizev1.KustomizationSpec{Path: "apps/db"}, fast: 1},
	{name: "testdata plain (a sub-folder with a kustomization)", dir: "plain", fast: 0},
	{name: "testdata plain/apps/web (a Deployment)", dir: "plain", spec: kustomizev1.KustomizationSpec{Path: "apps/web"}, fast: 1},
	{name: "testdata duplicates", dir: "duplicates", fast: 0},
	{name: "testdata invalid-yaml", dir: "invalid-yaml", fast: 0},
	{name: "testdata missing-name", dir: "missing-name", fast: 0},
	{name: "testdata substitution", dir: "substitution", spec: kustomizev1.KustomizationSpec{PostBuild: &kustomizev1.PostBuild{}},
		opts: Options{Vars: Variables{"env": {Value: "prod"}, "region": {Value: "eu"}}}, fast: 1},

	{name: "multi-document", files: map[string]string{"a.yaml": cmA + "---\n" + cmB}, fast: 1},
	{name: "separator oddities", files: map[string]string{"a.yaml": "---\n---\n# only a comment\n---\n" + cmA + "--- # trailing comment\n\n---\n" + cmB + "---\n"}, fast: 1},
	{name: "empty documents only beside a file", files: map[string]string{"a.yaml": "---\n---\n", "b.yaml": cmB}, fast: 1},
	{name: "v1 List", files: map[string]string{"l.yaml": "apiVersion: v1\nkind: List\nitems:\n- " + listItem(cmA) + "- " + listItem(cmB)}, fast: 1},
	{name: "ConfigMapList without a name", files: map[string]string{"l.yaml": "apiVersion: v1\nkind: ConfigMapList\nitems:\n- " + listItem(cmA) + "- " + listItem(cmB)}, fast: 0},
	{name: "ConfigMapList", files: map[string]string{"l.yaml": "apiVersion: v1\nkind: ConfigMapList\nmetadata:\n  name: l\nitems:\n- " + listItem(cmA) + "- " + listItem(cmB)}, fast: 1},
	{name: "List with null items", files: map[string]string{"l.yaml": "apiVersion: v1\nkind: List\nitems: null\n", "b.yaml": cmB}, fast: 1},
	{name: "List without items", files: map[string]string{"l.yaml": "apiVersion: v1\nkind: List\nmetadata:\n  name: x\n"}, fast: 0},
	{name: "duplicate inside a List", files: map[string]string{"l.yaml": "apiVersion: v1\nkind: List\nitems:\n- " + listItem(cmA) + "- " + listItem(cmA)}, fast: 0},
	{name: "duplicate between a List and a file", files: map[string]string{"l.yaml": "apiVersion: v1\nkind: List\nitems:\n- " + listItem(cmA), "z.yaml": cmA}, fast: 0},
	{name: "duplicate between a ConfigMapList and a file", files: map[string]string{"l.yaml": "apiVersion: v1\nkind: ConfigMapList\nmetadata:\n  name: l\nitems:\n- " + listItem(cmA), "z.yaml": cmA}, fast: 0},
	{name: "duplicate cluster-scoped objects in two namespaces", files: map[string]string{
		"a.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n  namespace: a\n",
		"b.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n  namespace: b\n"}, fast: 0},
	{name: "duplicate across files", files: map[string]string{"a.yaml": cmA, "b.yaml": cmA}, fast: 0},
	{name: "default namespace is the empty one", files: map[string]string{
		"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
		"b.yaml": "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n    namespace: default\n"}, fast: 0},
	{name: "JSON", files: map[string]string{"a.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"z":"1","a":"2"}},"data":{"n":"1.0","b":"true"}}`}, fast: 1},
	{name: "comments", files: map[string]string{"a.yaml": "# head\napiVersion: v1 # the version\nkind: ConfigMap\nmetadata:\n  # the name\n  name: a\ndata:\n  k: v # inline\n"}, fast: 1},
	{name: "anchors and aliases", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: &l\n    app: web\n  annotations: *l\ndata:\n  x: &v shared\n  y: *v\n"}, fast: 1},
	{name: "quoted and multiline strings", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"a\"\ndata:\n  q: 'it''s'\n  d: \"tab\\tnl\\n\\u00e9\"\n  lit: |\n    line 1\n      line 2\n  fold: >-\n    folded\n    text\n  num: \"012\"\n  yes: \"yes\"\n  empty: \"\"\n"}, fast: 1},
	{name: "key order", files: map[string]string{"a.yaml": "data:\n  z: 1\n  a: 2\nmetadata:\n  namespace: apps\n  name: a\nkind: ConfigMap\napiVersion: v1\n"}, fast: 1},
	{name: "CRLF", files: map[string]string{"a.yaml": strings.ReplaceAll(cmA+"---\n"+cmB, "\n", "\r\n")}, fast: 1},
	{name: "local config dropped", files: map[string]string{"a.yaml": cmA + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n"}, fast: 1},
	{name: "local config false kept", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n  annotations:\n    config.kubernetes.io/local-config: \"false\"\n    other: x\n"}, fast: 1},
	{name: "annotation values that are not strings", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    n: 1\n    b: true\n    f: 1.50\n"}, fast: 1},
	{name: "empty annotations", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations: {}\n"}, fast: 0},
	{name: "a kustomize build annotation", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    internal.config.kubernetes.io/needsHashSuffix: enabled\n"}, fast: 0},
	{name: "an origin annotation", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    config.kubernetes.io/origin: |\n      path: x.yaml\n"}, fast: 0},
	{name: "skipped files", files: map[string]string{"values.yaml": "replicas: 3\nimage: x\n", "notes.txt": "not yaml: [", "a.yaml": cmA}, fast: 1},
	{name: "only skipped files", files: map[string]string{"values.yaml": "replicas: 3\n"}, fast: 0},
	{name: "sub-folders without kustomizations", files: map[string]string{"x/a.yaml": cmA, "x/y/b.yml": cmB, ".hidden/c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"}, fast: 1},
	{name: "the four fleet kinds and a Namespace", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n---\n" + cmA +
		"---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: apps\nstringData:\n  p: q\ntype: Opaque\n" +
		"---\napiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n  namespace: apps\nspec:\n  ports:\n  - port: 80\n    targetPort: 8080\n" +
		"---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\n  namespace: apps\nsecrets:\n- name: s\n"}, fast: 1},
	{name: "a ServiceAccount with imagePullSecrets", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\nimagePullSecrets:\n- name: s\n"}, fast: 1},
	{name: "a Deployment", files: map[string]string{"a.yaml": cmA + "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec: {}\n"}, fast: 1},
	{name: "an Ingress (a kind the fast path does not take)", files: map[string]string{"a.yaml": cmA + "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: i\nspec: {}\n"}, fast: 0},
	{name: "generateName", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: job-\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: job-\ndata:\n  k: v\n"}, fast: 1},
	{name: "postBuild substitution", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a-${env}\n  namespace: ${ns:=apps}\ndata:\n  k: ${secret}\n  n: \"${count}\"\n"},
		spec: kustomizev1.KustomizationSpec{PostBuild: &kustomizev1.PostBuild{}},
		opts: Options{Vars: Variables{"env": {Value: "prod"}, "secret": {Value: "hunter22", Secret: true}, "count": {Value: "3"}}}, fast: 1},
	{name: "strict substitution failing", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a-${missing}\n"},
		spec: kustomizev1.KustomizationSpec{PostBuild: &kustomizev1.PostBuild{}}, opts: Options{StrictSubstitution: true}, fast: 1},
	{name: "commonMetadata", files: map[string]string{"a.yaml": cmA + "---\n" + cmB},
		spec: kustomizev1.KustomizationSpec{CommonMetadata: &kustomizev1.CommonMetadata{Labels: map[string]string{"team": "x"}, Annotations: map[string]string{"owner": "y"}}}, fast: 1},
	{name: "a spec field for kustomize", files: map[string]string{"a.yaml": cmA}, spec: kustomizev1.KustomizationSpec{Components: []string{"c"}, IgnoreMissingComponents: true}, fast: 0},
	{name: "the output limit", files: map[string]string{"a.yaml": cmA + "---\n" + cmB}, opts: Options{Limits: Limits{MaxOutputBytes: 100}}, fast: 1},
	{name: "the input limit", files: map[string]string{"a.yaml": cmA + "---\n" + cmB}, opts: Options{Limits: Limits{MaxInputBytes: 300}}, fast: -1},
	{name: "the input limit at kustomize's own reads", files: map[string]string{"a.yaml": cmA}, opts: Options{Limits: Limits{MaxInputBytes: int64(2*len(cmA) + 150)}}, fast: -1},
	{name: "a missing name", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {a: b}\n"}, fast: 0},
	{name: "a null item in a list", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  finalizers:\n  - \n"}, fast: 1},
	{name: "a null item in a List's items", files: map[string]string{"l.yaml": "apiVersion: v1\nkind: List\nitems:\n- " + listItem(cmA) + "- \n"}, fast: -1},
	{name: "a link to a folder outside spec.path", files: map[string]string{"app/a.yaml": cmA, "other/b.yaml": cmB},
		links: map[string]string{"app/linked": "../other"}, spec: kustomizev1.KustomizationSpec{Path: "app"}, fast: 0},
	{name: "a link to a folder inside spec.path", files: map[string]string{"app/a.yaml": cmA, "app/other/b.yaml": cmB},
		links: map[string]string{"app/linked": "other", "app/c.yaml": "other/b.yaml"}, spec: kustomizev1.KustomizationSpec{Path: "app"}, fast: -1},
}

// userKustomizationCases are fastCases with a kustomization file of the
// user's own: the fast path takes one that kustomize reads as it reads a
// generated one, resources that are files and nothing else.
var userKustomizationCases = []fastCase{
	{name: "a kustomization listing files", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- a.yaml\n- sub/b.yaml\n", "a.yaml": cmA, "sub/b.yaml": cmB}, fast: 1},
	{name: "a kustomization listing files out of lexical order", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- ./z.yaml\n- a.yaml\n", "a.yaml": cmA, "z.yaml": cmB}, fast: 1},
	{name: "a kustomization without apiVersion and kind", files: map[string]string{
		"kustomization.yaml": "resources:\n- a.yaml\n", "a.yaml": cmA}, fast: 1},
	{name: "a kustomization named Kustomization", files: map[string]string{
		"Kustomization": kustomizationHeader + "resources:\n- a.yaml\n", "a.yaml": cmA}, fast: 1},
	{name: "a kustomization.yml", files: map[string]string{
		"kustomization.yml": kustomizationHeader + "resources:\n- a.yaml\n", "a.yaml": cmA}, fast: 1},
	{name: "the deprecated bases listing a file", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- a.yaml\nbases:\n- b.yaml\n", "a.yaml": cmA, "b.yaml": cmB}, fast: 1},
	{name: "a listed file that is neither YAML nor JSON by its name", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- a.txt\n", "a.txt": cmA}, fast: 1},
	{name: "a listed file in a sub-folder with a kustomization", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- sub/b.yaml\n", "sub/b.yaml": cmB,
		"sub/kustomization.yaml": kustomizationHeader + "namePrefix: p-\nresources:\n- b.yaml\n"}, fast: 1},
	{name: "an empty file listed twice", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- e.yaml\n- a.yaml\n- e.yaml\n", "a.yaml": cmA, "e.yaml": "# nothing\n"}, fast: -1},
	{name: "a file listed twice", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- a.yaml\n- a.yaml\n", "a.yaml": cmA}, fast: 0},
	{name: "a kustomization with a namespace", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "namespace: other\nresources:\n- a.yaml\n", "a.yaml": cmA}, fast: 0},
	{name: "a kustomization with an empty field of another kind", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- a.yaml\npatches: []\n", "a.yaml": cmA}, fast: -1},
	// What make bench-render builds through kustomize (pkg/bench/render).
	{name: "a kustomization with an empty buildMetadata list", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- a.yaml\nbuildMetadata: []\n", "a.yaml": cmA}, fast: 0},
	{name: "a kustomization with an unknown field", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- a.yaml\nsurprise: 1\n", "a.yaml": cmA}, fast: 0},
	{name: "a Component", files: map[string]string{
		"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources:\n- a.yaml\n", "a.yaml": cmA}, fast: 0},
	{name: "a kustomization of another version", files: map[string]string{
		"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1\nkind: Kustomization\nresources:\n- a.yaml\n", "a.yaml": cmA}, fast: 0},
	{name: "an empty resources list", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources: []\n", "a.yaml": cmA}, fast: 0},
	{name: "a folder listed", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- sub\n", "sub/a.yaml": cmA}, fast: 0},
	{name: "a missing file listed", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- a.yaml\n- gone.yaml\n", "a.yaml": cmA}, fast: 0},
	{name: "a file outside the folder listed", files: map[string]string{
		"app/kustomization.yaml": kustomizationHeader + "resources:\n- ../b.yaml\n", "b.yaml": cmB},
		spec: kustomizev1.KustomizationSpec{Path: "app"}, fast: 0},
	{name: "an absolute path listed", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- /a.yaml\n", "a.yaml": cmA}, fast: 0},
	{name: "a URL listed", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- https://127.0.0.1:1/a.yaml\n", "a.yaml": cmA}, fast: 0},
	{name: "a remote base listed", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- git@127.0.0.1:org/repo\n", "a.yaml": cmA}, fast: 0},
	{name: "two kustomization files", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- a.yaml\n", "kustomization.yml": kustomizationHeader + "resources:\n- b.yaml\n",
		"a.yaml": cmA, "b.yaml": cmB}, fast: 0},
	{name: "a kustomization file linked from outside the folder", files: map[string]string{
		"app/a.yaml": cmA, "other/kustomization.yaml": kustomizationHeader + "resources:\n- a.yaml\n"},
		links: map[string]string{"app/kustomization.yaml": "../other/kustomization.yaml"}, spec: kustomizev1.KustomizationSpec{Path: "app"}, fast: 0},
	{name: "a listed file linked from outside the folder", files: map[string]string{
		"app/kustomization.yaml": kustomizationHeader + "resources:\n- b.yaml\n", "other/b.yaml": cmB},
		links: map[string]string{"app/b.yaml": "../other/b.yaml"}, spec: kustomizev1.KustomizationSpec{Path: "app"}, fast: 0},
	{name: "a listed Deployment", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- a.yaml\n", "a.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec: {}\n"}, fast: 1},
	{name: "a kustomization with a spec field for kustomize", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- a.yaml\n", "a.yaml": cmA},
		spec: kustomizev1.KustomizationSpec{Components: []string{"c"}, IgnoreMissingComponents: true}, fast: 0},
	{name: "a kustomization and postBuild substitution", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- a.yaml\n", "a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a-${env:=x}\n"},
		spec: kustomizev1.KustomizationSpec{PostBuild: &kustomizev1.PostBuild{}}, fast: 1},
	{name: "a kustomization and the input limit", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- a.yaml\n- b.yaml\n", "a.yaml": cmA, "b.yaml": cmB},
		opts: Options{Limits: Limits{MaxInputBytes: 300}}, fast: -1},
}

// targetNamespaceCases are the namespace transformer's rules on the fast
// kinds: a namespaced object moved (with a namespace or without), a
// Namespace renamed to the target, a cluster-scoped object's namespace
// field left alone, the conflicts the change makes refused as kustomize
// refuses them, and the kinds the fast path leaves to kustomize.
var targetNamespaceCases = []fastCase{
	{name: "targetNamespace on every fast kind", files: map[string]string{
		"a.yaml": cmA + "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  k: v\n",
		"b.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n  namespace: default\nspec:\n  ports:\n  - port: 80\n---\n" +
			"apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\n  annotations:\n    a: b\n",
		"c.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n  labels:\n    l: v\n"},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "target"}, fast: 1},
	{name: "targetNamespace and a Namespace with a namespace field", files: map[string]string{
		"a.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n  namespace: odd\n", "b.yaml": cmB},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "t"}, fast: 1},
	{name: "targetNamespace equal to an object's", files: map[string]string{"a.yaml": cmA, "b.yaml": cmB},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "apps"}, fast: 1},
	{name: "targetNamespace default", files: map[string]string{"a.yaml": cmA, "b.yaml": cmB},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "default"}, fast: 1},
	{name: "targetNamespace from a user kustomization", files: map[string]string{
		"kustomization.yaml": kustomizationHeader + "resources:\n- a.yaml\n- b.yaml\n", "a.yaml": cmA, "b.yaml": cmB},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "t"}, fast: 1},
	{name: "targetNamespace with substitution and commonMetadata", files: map[string]string{
		"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a-${env:=x}\n  namespace: ${env}\n"},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "t", PostBuild: &kustomizev1.PostBuild{},
			CommonMetadata: &kustomizev1.CommonMetadata{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"n": "1"}}},
		opts: Options{Vars: Variables{"env": {Value: "prod"}}}, fast: 1},
	{name: "targetNamespace and a List", files: map[string]string{"l.yaml": "apiVersion: v1\nkind: List\nitems:\n- " + listItem(cmA) + "- " + listItem(cmB)},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "t"}, fast: 1},
	{name: "targetNamespace and a local-config object", files: map[string]string{
		"a.yaml": cmA, "b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n"},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "t"}, fast: 1},
	{name: "targetNamespace and a generateName object", files: map[string]string{
		"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: g-\n", "b.yaml": cmB},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "t"}, fast: -1},
	{name: "targetNamespace makes two objects one", files: map[string]string{
		"a.yaml": cmA, "b.yaml": strings.Replace(cmA, "apps", "other", 1)},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "t"}, fast: 0},
	{name: "targetNamespace makes two objects one, one of them local config", files: map[string]string{
		"a.yaml": cmA, "b.yaml": strings.Replace(cmA, "namespace: apps", "namespace: other\n  annotations:\n    config.kubernetes.io/local-config: \"true\"", 1)},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "t"}, fast: 0},
	{name: "targetNamespace makes two Namespaces one", files: map[string]string{
		"a.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n"},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "t"}, fast: 0},
	{name: "targetNamespace and a Deployment", files: map[string]string{
		"a.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec: {}\n", "b.yaml": cmB},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "t"}, fast: 1},
	{name: "targetNamespace and a RoleBinding", files: map[string]string{
		"a.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: rb\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: view\nsubjects:\n- kind: ServiceAccount\n  name: default\n  namespace: x\n"},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "t"}, fast: 0},
	{name: "targetNamespace and a name prefix", files: map[string]string{"a.yaml": cmA},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "t", NamePrefix: "p-"}, fast: 1},
	{name: "targetNamespace and the input limit", files: map[string]string{"a.yaml": cmA, "b.yaml": cmB},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "t"}, opts: Options{Limits: Limits{MaxInputBytes: 200}}, fast: -1},
}

// overlayCases are the overlay's other fields the fast path does
// (fastoverlay.go) — a prefix and suffix, images, patches — and what it
// leaves to kustomize.
var overlayCases = []fastCase{
	{name: "a prefix and suffix, a Namespace kept", files: map[string]string{
		"a.yaml": cmA, "b.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec: {}\n"},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "t", NamePrefix: "p-", NameSuffix: "-s"}, fast: 1},
	{name: "a prefix and a Deployment referring to a ConfigMap", files: map[string]string{
		"a.yaml": cmA, "b.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  namespace: apps\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: nginx\n        envFrom:\n        - configMapRef:\n            name: a\n"},
		spec: kustomizev1.KustomizationSpec{NamePrefix: "p-"}, fast: 0},
	{name: "images on a container a ConfigMap holds", files: map[string]string{
		"a.yaml": cmA + "  containers:\n  - image: nginx:1.0\n  - image: busybox\n"},
		spec: kustomizev1.KustomizationSpec{Images: []kustomizev1.Image{{Name: "nginx", NewName: "r.example/nginx", Digest: "sha256:" + strings.Repeat("0", 64)}, {Name: "busybox", NewTag: "2"}}}, fast: 1},
	{name: "images and a JSON 6902 patch of every ConfigMap (bench-fleet's images-patch)", files: map[string]string{
		"a.yaml": strings.Replace(cmA, "namespace: apps", "labels: {app: a}", 1), "b.yaml": strings.Replace(cmB, "namespace: apps", "labels: {app: b}", 1)},
		spec: kustomizev1.KustomizationSpec{Images: []kustomizev1.Image{{Name: "nginx", NewTag: "1.27.0"}}, Patches: []kustomizev1.Patch{{
			Patch: `[{"op": "add", "path": "/metadata/labels/patched", "value": "true"}]`, Target: &kustomizev1.Selector{Kind: "ConfigMap"}}}}, fast: 1},
	{name: "a JSON 6902 patch that fails on an object", files: map[string]string{"a.yaml": cmA},
		spec: kustomizev1.KustomizationSpec{Patches: []kustomizev1.Patch{{
			Patch: `[{"op": "replace", "path": "/metadata/labels/x", "value": "y"}]`, Target: &kustomizev1.Selector{Kind: "ConfigMap"}}}}, fast: 0},
	{name: "a JSON 6902 patch that renames", files: map[string]string{"a.yaml": cmA, "b.yaml": cmB},
		spec: kustomizev1.KustomizationSpec{Patches: []kustomizev1.Patch{{
			Patch: `[{"op": "replace", "path": "/metadata/name", "value": "c"}]`, Target: &kustomizev1.Selector{Name: "a"}}}}, fast: 0},
	{name: "a JSON 6902 patch without a target", files: map[string]string{"a.yaml": cmA},
		spec: kustomizev1.KustomizationSpec{Patches: []kustomizev1.Patch{{Patch: `[{"op": "add", "path": "/data/x", "value": "y"}]`}}}, fast: 0},
	{name: "a strategic-merge patch by id", files: map[string]string{"a.yaml": cmA, "b.yaml": cmB},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "t", NamePrefix: "p-", Patches: []kustomizev1.Patch{{
			Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: apps\ndata:\n  k: patched\n"}}}, fast: 1},
	{name: "a strategic-merge patch of no object", files: map[string]string{"a.yaml": cmA},
		spec: kustomizev1.KustomizationSpec{Patches: []kustomizev1.Patch{{
			Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  k: patched\n"}}}, fast: 0},
	{name: "two strategic-merge patches in one entry", files: map[string]string{"a.yaml": cmA, "b.yaml": cmB},
		spec: kustomizev1.KustomizationSpec{Patches: []kustomizev1.Patch{{
			Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: apps\ndata:\n  k: patched\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: apps\ndata:\n  k: patched\n"}}}, fast: 0},
	{name: "a strategic-merge patch that deletes", files: map[string]string{"a.yaml": cmA, "b.yaml": cmB},
		spec: kustomizev1.KustomizationSpec{Patches: []kustomizev1.Patch{{
			Patch: "$patch: delete\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: any\n", Target: &kustomizev1.Selector{Name: "b"}}}}, fast: 1},
	{name: "a strategic-merge patch by label and annotation selectors", files: map[string]string{
		"a.yaml": strings.Replace(cmA, "namespace: apps", "namespace: apps\n  labels: {tier: web}\n  annotations: {team: x}", 1), "b.yaml": cmB},
		spec: kustomizev1.KustomizationSpec{Patches: []kustomizev1.Patch{{
			Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: any\ndata:\n  k2: v2\n", Target: &kustomizev1.Selector{LabelSelector: "tier=web", AnnotationSelector: "team in (x)"}}}}, fast: 1},
	{name: "a patch that makes a ServiceAccount refer to a Secret", files: map[string]string{
		"a.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\n", "b.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: pull\n"},
		spec: kustomizev1.KustomizationSpec{NamePrefix: "p-", Patches: []kustomizev1.Patch{{
			Patch: "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\nimagePullSecrets:\n- name: pull\n"}}}, fast: 0},
	{name: "a patch that adds a kustomize annotation", files: map[string]string{"a.yaml": cmA},
		spec: kustomizev1.KustomizationSpec{Patches: []kustomizev1.Patch{{
			Patch: "- op: add\n  path: /metadata/annotations\n  value: {kustomize.config.k8s.io/behavior: merge}\n", Target: &kustomizev1.Selector{Kind: "ConfigMap"}}}}, fast: 0},
	{name: "a patch that makes an object local config", files: map[string]string{"a.yaml": cmA, "b.yaml": cmB},
		spec: kustomizev1.KustomizationSpec{Patches: []kustomizev1.Patch{{
			Patch: "- op: add\n  path: /metadata/annotations\n  value: {config.kubernetes.io/local-config: \"true\"}\n", Target: &kustomizev1.Selector{Name: "a"}}}}, fast: 1},
	{name: "a patch that is both kinds", files: map[string]string{"a.yaml": cmA},
		spec: kustomizev1.KustomizationSpec{Patches: []kustomizev1.Patch{{Patch: "  "}}}, fast: 0},
}

// deploy is a Deployment named name in namespace (none when empty) whose
// Pod template holds spec, indented under template.spec.
func deploy(name, namespace, spec string) string {
	s := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name + "\n"
	if namespace != "" {
		s += "  namespace: " + namespace + "\n"
	}
	return s + "spec:\n  template:\n    spec:\n" + indent(spec, "      ")
}

// webSpec is a Pod spec that refers to others through most of kustomize's
// name-reference paths: a ConfigMap and a Secret by volume, env and
// envFrom, a pull Secret, a ServiceAccount, a claim and a PriorityClass.
const webSpec = `serviceAccountName: a
priorityClassName: high
imagePullSecrets:
- name: b
initContainers:
- name: init
  image: busybox
  envFrom:
  - secretRef: {name: b}
containers:
- name: web
  image: nginx:1
  env:
  - name: K
    valueFrom:
      configMapKeyRef: {name: a, key: k}
  - name: S
    valueFrom:
      secretKeyRef: {name: b, key: k}
  envFrom:
  - configMapRef: {name: a}
volumes:
- name: c
  configMap: {name: a}
- name: s
  secret: {secretName: b}
- name: p
  projected:
    sources:
    - configMap: {name: a}
    - secret: {name: b}
- name: d
  persistentVolumeClaim: {claimName: data}
`

// referrerCases are objects kustomize's name-reference step treats as
// referrers (docs/design/render-fast-path.md, "Referrers"): taken when the
// build renames nothing and every reference is a name, left to kustomize
// otherwise.
var referrerCases = []fastCase{
	{name: "a Deployment referring to objects of the build", files: map[string]string{
		"a.yaml": cmA, "b.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: b\n  namespace: apps\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n  namespace: apps\n",
		"c.yaml": deploy("web", "apps", webSpec)}, fast: 1},
	{name: "targetNamespace and a Deployment referring to objects of other namespaces", files: map[string]string{
		"a.yaml": cmA, "b.yaml": strings.Replace(cmA, "apps", "other", 1) + "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: b\n",
		"c.yaml": deploy("web", "other", webSpec)},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "t"}, fast: 0}, // two ConfigMaps a made one
	{name: "targetNamespace and every workload kind", files: map[string]string{
		"a.yaml": cmA + "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: b\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n  namespace: x\nimagePullSecrets:\n- name: b\n",
		"b.yaml": deploy("web", "apps", webSpec) +
			"---\n" + strings.Replace(deploy("web", "apps", webSpec), "Deployment", "DaemonSet", 1) +
			"---\n" + strings.Replace(deploy("web", "", webSpec), "Deployment", "ReplicaSet", 1) +
			"---\n" + strings.Replace(strings.Replace(deploy("web", "", webSpec), "Deployment", "StatefulSet", 1), "spec:\n  template:", "spec:\n  serviceName: a\n  volumeClaimTemplates:\n  - metadata: {name: data}\n    spec: {storageClassName: fast}\n  template:", 1) +
			"---\n" + strings.Replace(strings.Replace(deploy("web", "", webSpec), "apps/v1", "batch/v1", 1), "Deployment", "Job", 1) +
			"---\n" + strings.Replace(strings.Replace(deploy("web", "", webSpec), "apps/v1", "v1", 1), "Deployment", "ReplicationController", 1) +
			"---\napiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: web\nspec:\n  schedule: '@daily'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n" + indent(webSpec, "          ") +
			"---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n" + indent(webSpec, "  "),
	}, spec: kustomizev1.KustomizationSpec{TargetNamespace: "t", Images: []kustomizev1.Image{{Name: "nginx", NewTag: "2"}, {Name: "busybox", NewName: "r.example/busybox", Digest: "sha256:" + strings.Repeat("0", 64)}}}, fast: 1},
	{name: "a Deployment and a ConfigMap of the same name in two namespaces", files: map[string]string{
		"a.yaml": cmA, "b.yaml": strings.Replace(cmA, "apps", "other", 1), "c.yaml": deploy("web", "", "containers:\n- name: c\n  envFrom:\n  - configMapRef: {name: a}\n")},
		fast: 1},
	{name: "two ServiceAccounts a Deployment may refer to, both with previous ids", files: map[string]string{
		"a.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n  namespace: x\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n  namespace: y\n",
		"b.yaml": deploy("web", "z", "serviceAccountName: a\ncontainers:\n- name: c\n")},
		spec: kustomizev1.KustomizationSpec{Patches: []kustomizev1.Patch{{ // a JSON 6902 patch records each id as previous
			Patch: `[{"op": "add", "path": "/metadata/labels", "value": {"p": "x"}}]`, Target: &kustomizev1.Selector{Name: "a|web"}}}}, fast: 1},
	{name: "a name reference that is a list of names", files: map[string]string{
		"a.yaml": cmA, "b.yaml": deploy("web", "apps", "containers:\n- name: c\n  envFrom:\n  - configMapRef: {name: [a, b, ~]}\n")},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "t"}, fast: 1},
	{name: "a name reference that is a mapping", files: map[string]string{
		"a.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n  namespace: x\n", "b.yaml": deploy("web", "", "serviceAccountName: {name: a}\ncontainers:\n- name: c\n")},
		fast: 0},
	{name: "a name reference that is a list holding a mapping", files: map[string]string{
		"a.yaml": cmA, "b.yaml": deploy("web", "apps", "containers:\n- name: c\n  envFrom:\n  - configMapRef: {name: [a, {name: a}]}\n")},
		fast: 0},
	{name: "a Pod template whose containers are names", files: map[string]string{
		"a.yaml": cmA, "b.yaml": deploy("web", "apps", "containers: [a, b]\n")},
		fast: 0},
	{name: "image pull Secrets that are names", files: map[string]string{
		"a.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\nimagePullSecrets: [a]\n"},
		fast: 0},
	{name: "a prefix and a Deployment referring to nothing", files: map[string]string{
		"a.yaml": cmA, "b.yaml": deploy("web", "apps", "containers:\n- name: c\n  image: nginx\n")},
		spec: kustomizev1.KustomizationSpec{NamePrefix: "p-", TargetNamespace: "t"}, fast: 1},
	{name: "a suffix and a CronJob referring to a Secret", files: map[string]string{
		"a.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n",
		"b.yaml": "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: j\nspec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          imagePullSecrets:\n          - name: s\n"},
		spec: kustomizev1.KustomizationSpec{NameSuffix: "-s"}, fast: 0},
	{name: "images on a CronJob's containers and init containers", files: map[string]string{
		"a.yaml": "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: j\nspec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          initContainers:\n          - {name: i, image: 'nginx@sha256:" + strings.Repeat("1", 64) + "'}\n          containers:\n          - {name: c, image: nginx:1}\n          - {name: d, image: busybox}\n"},
		spec: kustomizev1.KustomizationSpec{Images: []kustomizev1.Image{{Name: "nginx", NewName: "r.example/nginx", NewTag: "2"}, {Name: "busybox", Digest: "sha256:" + strings.Repeat("2", 64)}}}, fast: 1},
	{name: "the issue's images and patch on Deployments, targetNamespace", files: map[string]string{
		"a.yaml": deploy("web", "", "containers:\n- name: web\n  image: nginx:1\n- name: side\n  image: busybox\n") + "---\n" + deploy("api", "", "containers:\n- name: web\n  image: nginx:1\n")},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "t", Images: []kustomizev1.Image{{Name: "nginx", NewTag: "1.27.0"}}, Patches: []kustomizev1.Patch{{
			Patch:  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: any\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      - name: web\n        resources:\n          limits: {memory: 64Mi}\n",
			Target: &kustomizev1.Selector{Kind: "Deployment"}}}}, fast: 1},
	{name: "a strategic-merge patch of a Deployment by id that adds a referring volume", files: map[string]string{
		"a.yaml": cmA, "b.yaml": deploy("web", "apps", "containers:\n- name: web\n  image: nginx:1\n  env:\n  - {name: A, value: a}\n")},
		spec: kustomizev1.KustomizationSpec{TargetNamespace: "t", Patches: []kustomizev1.Patch{{
			Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: apps\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        env:\n        - {name: B, value: b}\n        volumeMounts:\n        - {name: c, mountPath: /c}\n      volumes:\n      - name: c\n        configMap: {name: a}\n"}}}, fast: 1},
	{name: "a strategic-merge patch that deletes a container and replaces a list", files: map[string]string{
		"a.yaml": deploy("web", "", "containers:\n- name: web\n  image: nginx:1\n  ports:\n  - {containerPort: 80}\n- name: side\n  image: busybox\n")},
		spec: kustomizev1.KustomizationSpec{Patches: []kustomizev1.Patch{{
			Patch:  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: any\nspec:\n  template:\n    spec:\n      containers:\n      - name: side\n        $patch: delete\n      - name: web\n        ports:\n        - {containerPort: 8080}\n",
			Target: &kustomizev1.Selector{Kind: "Deployment", Name: "web"}}}}, fast: 1},
	{name: "a JSON 6902 patch of a Deployment's image and replicas", files: map[string]string{
		"a.yaml": deploy("web", "", "containers:\n- name: web\n  image: nginx:1\n")},
		spec: kustomizev1.KustomizationSpec{Images: []kustomizev1.Image{{Name: "busybox", NewTag: "2"}}, Patches: []kustomizev1.Patch{{
			Patch:  `[{"op": "add", "path": "/spec/replicas", "value": 3}, {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "busybox:1"}]`,
			Target: &kustomizev1.Selector{Group: "apps", Kind: "Deployment"}}}}, fast: 1},
	{name: "a patch that makes a name reference a mapping", files: map[string]string{
		"a.yaml": deploy("web", "", "containers:\n- name: web\n  image: nginx:1\n")},
		spec: kustomizev1.KustomizationSpec{Patches: []kustomizev1.Patch{{
			Patch:  `[{"op": "add", "path": "/spec/template/spec/serviceAccountName", "value": {"name": "a"}}]`,
			Target: &kustomizev1.Selector{Kind: "Deployment"}}}}, fast: 0},
	{name: "a patch that deletes a Deployment whose containers are names", files: map[string]string{
		"a.yaml": cmA, "b.yaml": deploy("web", "", "containers: [a]\n")},
		spec: kustomizev1.KustomizationSpec{Patches: []kustomizev1.Patch{{
			Patch: "$patch: delete\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: any\n", Target: &kustomizev1.Selector{Kind: "Deployment"}}}}, fast: 1},
	{name: "local config that refers to others", files: map[string]string{
		"a.yaml": cmA, "b.yaml": strings.Replace(deploy("web", "apps", "containers: [a]\n"), "namespace: apps", "namespace: apps\n  annotations:\n    config.kubernetes.io/local-config: \"true\"", 1)},
		fast: 0},
}

func listItem(doc string) string {
	return strings.ReplaceAll(strings.TrimSuffix(doc, "\n"), "\n", "\n  ") + "\n"
}

// outcome is what a build returns, in a form to compare.
type outcome struct {
	res    *Result
	reason string
	err    string
}

// buildBothWays builds work with kustomize (the fast path off) and then
// as Build does, and reports both and whether the second took the fast
// path. The package's tests run one at a time, so the counter counts this
// build alone.
func buildBothWays(t testing.TB, work string, spec *kustomizev1.KustomizationSpec, opts Options) (slow, fast outcome, tookFast bool) {
	t.Helper()
	run := func() outcome {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := Build(ctx, work, spec, opts)
		if err != nil {
			return outcome{reason: Reason(err), err: err.Error()}
		}
		return outcome{res: res}
	}
	disableFastPath.Store(true)
	slow = run()
	disableFastPath.Store(false)
	before := fastPathUses.Load()
	fast = run()
	return slow, fast, fastPathUses.Load() > before
}

func compareOutcomes(t testing.TB, slow, fast outcome) {
	t.Helper()
	if !reflect.DeepEqual(slow, fast) {
		t.Fatalf("the fast path differs from kustomize:\nkustomize: %s\nfast path: %s", describeOutcome(slow), describeOutcome(fast))
	}
}

func describeOutcome(o outcome) string {
	if o.res == nil {
		return fmt.Sprintf("error %s: %s", o.reason, o.err)
	}
	return fmt.Sprintf("%s %v\n%s", o.res.Digest, o.res.Objects, o.res.Manifests)
}

func (c fastCase) work(t testing.TB) string {
	if c.dir != "" {
		return workspace(t, c.dir)
	}
	work := t.TempDir()
	writeTree(t, SourceDir(work), c.files)
	for name, target := range c.links {
		if err := os.Symlink(target, filepath.Join(SourceDir(work), filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	return work
}

// TestFastPathEqualsKustomize builds every case with kustomize and with
// the fast path and requires the same result or the same error, and the
// fast path taken exactly where the case says.
func TestFastPathEqualsKustomize(t *testing.T) {
	for _, c := range slices.Concat(fastCases, userKustomizationCases, targetNamespaceCases, overlayCases, referrerCases) {
		t.Run(c.name, func(t *testing.T) {
			work := c.work(t)
			slow, fast, took := buildBothWays(t, work, &c.spec, c.opts)
			compareOutcomes(t, slow, fast)
			if c.fast >= 0 && took != (c.fast == 1) {
				t.Fatalf("fast path taken: %v, want %v (result: %s)", took, c.fast == 1, describeOutcome(fast))
			}
		})
	}
}

// TestFastPathShared shares the fast path's resources between builds as
// kustomize's were: the third build of a key is served from the copy
// kept by the second, and every one renders the same bytes.
func TestFastPathShared(t *testing.T) {
	work := t.TempDir()
	writeTree(t, SourceDir(work), map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a-${env}\n"})
	shared := NewSharedBuilds(0)
	spec := &kustomizev1.KustomizationSpec{PostBuild: &kustomizev1.PostBuild{}}
	before := fastPathUses.Load()
	var outs []string
	for _, env := range []string{"a", "b", "c", "d"} {
		res, err := Build(context.Background(), work, spec, Options{Shared: shared, Vars: Variables{"env": {Value: env}}})
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, string(res.Manifests))
	}
	if got := fastPathUses.Load() - before; got != 2 {
		t.Fatalf("the fast path ran %d times, want 2 (the fourth build is shared)", got)
	}
	if shared.Len() != 1 {
		t.Fatalf("%d builds kept, want 1", shared.Len())
	}
	for i, env := range []string{"a", "b", "c", "d"} {
		if want := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a-" + env + "\n"; outs[i] != want {
			t.Fatalf("build %d rendered %q, want %q", i, outs[i], want)
		}
	}
}

// TestFastKindReferrerPathsAreKustomizes checks fastKinds against
// kustomize's own name-reference configuration: the paths through which
// an object of a fast kind refers to others must be exactly those of
// kustomize's fieldSpecs that select the kind (nameReferences walks them
// all, and a path it did not know would be one the fast path does not
// check), and its scope kustomize's schema's. It fails when a kustomize
// upgrade changes either.
func TestFastKindReferrerPathsAreKustomizes(t *testing.T) {
	var refs []struct {
		FieldSpecs []struct {
			resid.Gvk `json:",inline"`
			Path      string `json:"path"`
		} `json:"fieldSpecs"`
	}
	if err := yaml.Unmarshal(defaultConfigSection(t, "nameReference"), &refs); err != nil {
		t.Fatal(err)
	}
	if len(refs) < 10 {
		t.Fatalf("read %d name references, want kustomize's whole list", len(refs))
	}
	referrers := 0
	for k, fk := range fastKinds {
		gvk := resid.NewGvk(k.Group, k.Version, k.Kind)
		if gvk.IsClusterScoped() != fk.clusterScoped {
			t.Errorf("%s: cluster-scoped %v in kustomize's schema, %v in fastKinds", gvk, gvk.IsClusterScoped(), fk.clusterScoped)
		}
		var kustomizes []string
		for _, r := range refs {
			for _, fs := range r.FieldSpecs {
				if gvk.IsSelected(&fs.Gvk) && !slices.Contains(kustomizes, fs.Path) {
					kustomizes = append(kustomizes, fs.Path)
				}
			}
		}
		ours := slices.Clone(fk.referrerPaths)
		slices.Sort(kustomizes)
		slices.Sort(ours)
		if !slices.Equal(ours, kustomizes) {
			t.Errorf("%s refers to others through %q in kustomize's configuration, %q in fastKinds", gvk, kustomizes, ours)
		}
		if len(ours) > 0 {
			referrers++
		}
	}
	// Pod, ReplicationController, Deployment, DaemonSet, ReplicaSet,
	// StatefulSet, Job, CronJob and ServiceAccount.
	if referrers != 9 {
		t.Errorf("%d fast kinds are referrers, want 9", referrers)
	}
}

// defaultConfigSection returns the named section of kustomize's default
// transformer configuration (as YAML), read through the one public way to
// it, its test harness's legacy configuration file.
func defaultConfigSection(t *testing.T, name string) []byte {
	t.Helper()
	th := kusttest_test.MakeHarness(t)
	th.WriteLegacyConfigs("/config.yaml")
	data, err := th.GetFSys().ReadFile("/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The legacy configuration is several YAML maps one after the other.
	start := strings.Index(string(data), "\n"+name+":")
	if start < 0 {
		t.Fatalf("no %s in kustomize's configuration", name)
	}
	lines := strings.Split(string(data[start+1:]), "\n")
	// The section ends where the next top-level key starts.
	end := len(lines)
	for i, l := range lines[1:] {
		if l != "" && l[0] != ' ' && l[0] != '-' && l[0] != '#' {
			end = i + 1
			break
		}
	}
	section := map[string]any{}
	if err := yaml.Unmarshal([]byte(strings.Join(lines[:end], "\n")), &section); err != nil {
		t.Fatal(err)
	}
	raw, err := yaml.Marshal(section[name])
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestNamespaceFieldSpecsAreKustomizes: the field specs the fast path
// gives kustomize's namespace filter are those of kustomize's default
// configuration, which krusty gives its namespace transformer.
func TestNamespaceFieldSpecsAreKustomizes(t *testing.T) {
	var want kustypes.FsSlice
	if err := yaml.Unmarshal(defaultConfigSection(t, "namespace"), &want); err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatal("no namespace field specs in kustomize's configuration")
	}
	if !reflect.DeepEqual(namespaceFieldSpecs, want) {
		t.Fatalf("namespaceFieldSpecs = %+v, kustomize's default = %+v", namespaceFieldSpecs, want)
	}
}

// FuzzFastPath compares the fast path with kustomize on two hostile files
// (one YAML, one JSON or YAML) and a hostile kustomization file beside
// them ("" for none), with and without substitution.
func FuzzFastPath(f *testing.F) {
	for _, c := range slices.Concat(fastCases, userKustomizationCases) {
		if c.files == nil {
			continue
		}
		var docs []string
		for name, v := range c.files {
			if name != konfig.DefaultKustomizationFileName() {
				docs = append(docs, v)
			}
		}
		docs = append(docs, "", "")
		f.Add(c.files[konfig.DefaultKustomizationFileName()], docs[0], docs[1], c.spec.PostBuild != nil)
	}
	f.Fuzz(func(t *testing.T, kustomization, a, b string, substitute bool) {
		work := t.TempDir()
		files := map[string]string{"a.yaml": a, "b.json": b}
		if kustomization != "" {
			files[konfig.DefaultKustomizationFileName()] = kustomization
		}
		writeTree(t, SourceDir(work), files)
		spec := &kustomizev1.KustomizationSpec{}
		opts := Options{Limits: fuzzLimits}
		if substitute {
			spec.PostBuild = &kustomizev1.PostBuild{}
			opts.Vars = Variables{"v": {Value: "x: [1]"}}
		}
		slow, fast, _ := buildBothWays(t, work, spec, opts)
		compareOutcomes(t, slow, fast)
	})
}

// TestParsedResourcesReusesOnlyWhatSliceFromBytesWouldWrap: the fast path
// takes generateKustomization's documents only where kustomize's own parse
// of the same bytes would have wrapped each document and nothing more;
// everywhere else it parses again, so the differential test's cases are
// what decide those.
func TestParsedResourcesReusesOnlyWhatSliceFromBytesWouldWrap(t *testing.T) {
	local := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: l\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n"
	// kio's reader unwraps a v1 List itself, in both parses; a FooList
	// is the factory's to expand.
	list := "apiVersion: v1\nkind: List\nitems:\n- " + listItem(cmA)
	cmList := "apiVersion: v1\nkind: ConfigMapList\nmetadata:\n  name: l\nitems:\n- " + listItem(cmA)
	anchors := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: &l\n    app: x\n  annotations: *l\ndata: &d\n  k: v\n---\n" +
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  labels: &m\n    app: y\nstringData:\n  <<: *m\n  j: w\n"
	badMeta := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [x]\n"
	nilEntry := "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  ports:\n  - null\n"
	for _, tc := range []struct {
		name   string
		parsed string // what generateKustomization parsed; "" parsed nothing
		read   string // what the fast path read
		reused bool
	}{
		{name: "the same bytes", parsed: cmA + "---\n" + cmB, read: cmA + "---\n" + cmB, reused: true},
		{name: "other bytes read", parsed: cmA, read: cmB},
		{name: "nothing parsed", read: cmA},
		// The reader drops an empty document itself, in both parses; an
		// empty mapping is the factory's to drop.
		{name: "an empty document", parsed: cmA + "---\n---\n" + cmB, read: cmA + "---\n---\n" + cmB, reused: true},
		{name: "an empty mapping", parsed: cmA + "---\n{}\n---\n" + cmB, read: cmA + "---\n{}\n---\n" + cmB},
		{name: "metadata the factory refuses", parsed: cmA + "---\n" + badMeta, read: cmA + "---\n" + badMeta},
		{name: "a v1 List", parsed: list, read: list, reused: true},
		{name: "anchors", parsed: anchors, read: anchors, reused: true},
		{name: "a ConfigMapList", parsed: cmList, read: cmList},
		{name: "a local-config document", parsed: cmA + "---\n" + local, read: cmA + "---\n" + local},
		// kustomize's check for a null entry (HasNilEntryInList, which
		// dropBadNodes calls) finds none in this kyaml: it is reused, and
		// compared below.
		{name: "a null list entry", parsed: nilEntry, read: nilEntry, reused: true},
		// One document each: taken as the sandbox counted them, plain
		// (DeAnchor skipped) or not.
		{name: "one plain document", parsed: cmA, read: cmA, reused: true},
		{name: "one document with aliases", parsed: oneAliased, read: oneAliased, reused: true},
		{name: "one document with a merge key", parsed: oneMerged, read: oneMerged, reused: true},
		{name: "one document with a quoted merge key", parsed: oneQuotedMerge, read: oneQuotedMerge, reused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var file parsedFile
			if tc.parsed != "" {
				file = parsedAsGenerated(t, tc.parsed)
			}
			got, reused := parsedResources(file, []byte(tc.read))
			if reused != tc.reused {
				t.Fatalf("reused = %t, want %t", reused, tc.reused)
			}
			if !reused {
				return
			}
			want, err := resourceFactory.SliceFromBytes([]byte(tc.read))
			if err != nil {
				t.Fatalf("reused what SliceFromBytes refuses: %v", err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d resources, SliceFromBytes made %d", len(got), len(want))
			}
			for i := range got {
				g, err := got[i].AsYAML()
				if err != nil {
					t.Fatal(err)
				}
				w, err := want[i].AsYAML()
				if err != nil {
					t.Fatal(err)
				}
				if string(g) != string(w) || got[i].CurId() != want[i].CurId() {
					t.Errorf("resource %d:\n%s\nSliceFromBytes:\n%s", i, g, w)
				}
			}
		})
	}
}

// Single documents that DeAnchor changes: aliases, a merge key, and a
// quoted "<<" key, which it removes.
const (
	oneAliased     = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: &l\n    app: x\n  annotations: *l\n"
	oneMerged      = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m\n  labels: &l\n    app: x\ndata:\n  <<: *l\n  k: v\n"
	oneQuotedMerge = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: q\ndata:\n  \"<<\": v\n  k: v\n"
)

// parsedAsGenerated returns data's parsedFile as generateKustomization
// makes it: the sandbox's documents where kioDocuments takes them, else
// kio's reader's.
func parsedAsGenerated(t *testing.T, data string) parsedFile {
	t.Helper()
	s := &sandboxFS{limits: Limits{}.withDefaults()}
	counted, err := s.parse("f.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if nodes, taken := kioDocuments([]byte(data), counted.docs); taken {
		return parsedFile{data: []byte(data), nodes: nodes, plain: counted.plain}
	}
	nodes, err := readManifestDocuments([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return parsedFile{data: []byte(data), nodes: nodes}
}

// TestFastPathParsesEachFileOnce: a build on the fast path takes every
// file's documents from generateKustomization's parse, which took them
// from the sandbox's parse for its budgets, and renders what kustomize
// renders.
func TestFastPathParsesEachFileOnce(t *testing.T) {
	work := t.TempDir()
	files := map[string]string{"a.yaml": cmA, "sub/b.yaml": cmB, "c.yaml": strings.ReplaceAll(cmA, "name: a", "name: c")}
	writeTree(t, SourceDir(work), files)
	counted := countedReuses.Load()
	if _, err := Build(context.Background(), work, &kustomizev1.KustomizationSpec{}, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := countedReuses.Load() - counted; got != int64(len(files)) {
		t.Fatalf("%d files taken as the sandbox parsed them, want %d", got, len(files))
	}
	before := parsedReuses.Load()
	slow, fast, took := buildBothWays(t, work, &kustomizev1.KustomizationSpec{}, Options{})
	compareOutcomes(t, slow, fast)
	if !took {
		t.Fatal("the fast path was not taken")
	}
	if got := parsedReuses.Load() - before; got != int64(len(files)) {
		t.Fatalf("%d files taken as parsed, want %d", got, len(files))
	}
}

// TestFastPathParsesEachListedFileOnce: the files a kustomization lists
// are taken as the sandbox parsed them for its budgets too, and render
// what kustomize renders; a file of two documents, which kio's reader
// splits its own way, is parsed again.
func TestFastPathParsesEachListedFileOnce(t *testing.T) {
	work := t.TempDir()
	files := map[string]string{
		"a.yaml": cmA, "sub/b.yaml": cmB,
		"two.yaml":           strings.ReplaceAll(cmA, "name: a", "name: c") + "---\n" + strings.ReplaceAll(cmA, "name: a", "name: d"),
		"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- a.yaml\n- sub/b.yaml\n- two.yaml\n",
	}
	writeTree(t, SourceDir(work), files)
	for _, spec := range []*kustomizev1.KustomizationSpec{{}, {TargetNamespace: "apps"}} {
		before := parsedReuses.Load()
		slow, fast, took := buildBothWays(t, work, spec, Options{})
		compareOutcomes(t, slow, fast)
		if !took {
			t.Fatalf("targetNamespace %q: the fast path was not taken", spec.TargetNamespace)
		}
		if got := parsedReuses.Load() - before; got != 2 {
			t.Fatalf("targetNamespace %q: %d listed files taken as parsed, want 2 (a.yaml, sub/b.yaml)", spec.TargetNamespace, got)
		}
	}
}

// TestOverlayFieldSpecsAreKustomizes: the field specs the fast path gives
// kustomize's prefix, suffix and image transformers are those of
// kustomize's default configuration, which krusty gives them.
func TestOverlayFieldSpecsAreKustomizes(t *testing.T) {
	for name, got := range map[string]kustypes.FsSlice{
		"namePrefix": namePrefixFieldSpecs,
		"nameSuffix": nameSuffixFieldSpecs,
		"images":     imageFieldSpecs,
	} {
		var want kustypes.FsSlice
		if err := yaml.Unmarshal(defaultConfigSection(t, name), &want); err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			t.Fatalf("no %s field specs in kustomize's configuration", name)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s field specs = %+v, kustomize's default = %+v", name, got, want)
		}
	}
}
