package e2e

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	sourcev1 "plumb.dev/api/source/v1"
	sourceextv1 "plumb.dev/api/sourceext/v1beta1"
	"plumb.dev/e2e/localenv"
	"plumb.dev/pkg/testhelm"
)

// The fixture of TestFluxReferenceRepositoryReachesReady.
const (
	// fluxReferenceDir is Flux's reference repository,
	// github.com/fluxcd/flux2-kustomize-helm-example, file for file (its
	// manifests and .sourceignore; not its README, licence, CI and
	// scripts) with only the apiVersions of Flux's kinds changed to
	// Plumb's, but for clusters/staging/flux-system's gotk-components.yaml
	// and gotk-sync.yaml: `flux bootstrap` writes Flux's own install there
	// (empty files in the repository), replaced here by Plumb's equivalent.
	fluxReferenceDir = "testdata/flux-reference"
	// fluxReferenceCharts are stand-ins for the charts it installs from
	// the internet (its README.md says what they hold).
	fluxReferenceCharts = "testdata/flux-reference-charts"
	// fluxSystem is the namespace of its cluster objects.
	fluxSystem = "flux-system"
)

// rewrite is one change made to the fixture as it is pushed: an address
// outside this machine pointed at its local stand-in.
type rewrite struct{ file, old, new string }

// Flux's reference repository (flux2-kustomize-helm-example) under Plumb:
// pushed to the Git server with only the apiVersions of Flux's kinds
// changed and its outside addresses pointed at local stand-ins (a chart
// repository on 127.0.0.1 for podinfo, an OCI registry on 127.0.0.1 for
// cert-manager and gateway-helm, plain HTTP and so insecure: true), then
// bootstrapped as `flux bootstrap` would, with Plumb's GitRepository and
// Kustomization for clusters/staging in place of Flux's install. Every
// object of the repository reaches Ready: the ArtifactGenerator and its
// ExternalArtifacts infrastructure and apps, the Kustomizations
// infra-controllers, infra-configs (its JSON 6902 patch on the
// ClusterIssuer) and apps in their dependsOn order, the sources, and the
// HelmReleases podinfo (a HelmRepository chart, values patched by
// apps/staging), cert-manager and envoy-gateway (chartRef OCIRepository),
// whose CRDs make infrastructure/configs apply.
func TestFluxReferenceRepositoryReachesReady(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	t.Cleanup(cancel)

	// The stand-ins: podinfo at a release and a pre-release (only
	// apps/staging's range takes the latter), the OCI charts under the
	// registry paths the repository names.
	charts, err := testhelm.NewRepo(testhelm.RepoOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(charts.Close)
	for _, version := range []string{"6.9.0", "6.10.0-rc.1"} {
		tgz, err := testhelm.PackageDirVersion(filepath.Join(fluxReferenceCharts, "podinfo"), version)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(charts.AddArchive(tgz)).To(Succeed())
	}
	registry, err := testhelm.NewRegistry(testhelm.RegistryOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(registry.Close)
	for chart, path := range map[string]string{"cert-manager": "jetstack/charts", "gateway-helm": "envoyproxy"} {
		tgz, err := testhelm.PackageDir(filepath.Join(fluxReferenceCharts, chart))
		g.Expect(err).NotTo(HaveOccurred())
		_, err = registry.PushArchiveTo(tgz, path)
		g.Expect(err).NotTo(HaveOccurred())
	}

	const repo = "flux2-kustomize-helm-example"
	g.Expect(env.Git.CreateRepo(ctx, repo)).To(Succeed())
	files := fluxReferenceFiles(g, []rewrite{
		{"clusters/staging/flux-system/gotk-sync.yaml", "url: https://github.com/fluxcd/flux2-kustomize-helm-example", "url: " + env.Git.URL(repo)},
		{"apps/base/podinfo/repository.yaml", "url: https://stefanprodan.github.io/podinfo", "url: " + charts.URL()},
		{"infrastructure/controllers/cert-manager.yaml", "url: oci://quay.io/jetstack/charts/cert-manager",
			"url: oci://" + registry.Host() + "/jetstack/charts/cert-manager\n  insecure: true"},
		{"infrastructure/controllers/envoy-gateway.yaml", "url: oci://docker.io/envoyproxy/gateway-helm",
			"url: oci://" + registry.Host() + "/envoyproxy/gateway-helm\n  insecure: true"},
	})
	clone, err := localenv.InitClone(ctx, env.Git.URL(repo), filepath.Join(t.TempDir(), repo))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(clone.Write(files)).To(Succeed())
	sha, err := clone.CommitAndPush(ctx, "Flux's reference repository, its apiVersions Plumb's")
	g.Expect(err).NotTo(HaveOccurred())

	// The bootstrap: what `flux bootstrap` applies before the cluster's
	// Kustomization takes over, its install and its sync; the rights
	// first, counted by the authorizer before anything acts with them.
	for _, f := range []string{"gotk-components.yaml", "gotk-sync.yaml"} {
		_, err := env.ApplyYAML(ctx, []byte(files["clusters/staging/flux-system/"+f]))
		g.Expect(err).NotTo(HaveOccurred(), "applying %s", f)
		if f == "gotk-components.yaml" {
			for _, ns := range []string{fluxSystem, "cert-manager", "envoy-gateway-system", "podinfo"} {
				waitAllowedIn(ctx, g, types.NamespacedName{Namespace: ns, Name: "default"}, "create", "customresourcedefinitions", "")
			}
		}
	}

	// The cluster's Kustomization syncs clusters/staging, itself included.
	head := revision(sha)
	waitObjectReady(ctx, t, sourcev1.GroupVersion.WithKind(sourcev1.GitRepositoryKind), fluxSystem, "flux-system")
	waitApplied(ctx, t, types.NamespacedName{Namespace: fluxSystem, Name: "flux-system"}, head)

	// The ArtifactGenerator composes the two ExternalArtifacts from the
	// commit, each recording the commit it came from.
	waitObjectReady(ctx, t, sourceextv1.GroupVersion.WithKind(sourceextv1.ArtifactGeneratorKind), fluxSystem, "flux-system")
	artifacts := map[string]string{}
	for _, name := range []string{"infrastructure", "apps"} {
		g.Eventually(func(g Gomega) {
			ea := &sourcev1.ExternalArtifact{}
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: fluxSystem, Name: name}, ea)).To(Succeed())
			g.Expect(ea.Status.Artifact).NotTo(BeNil(), "ExternalArtifact %s has no artifact", name)
			g.Expect(ea.Status.Artifact.Metadata).To(HaveKeyWithValue(sourceextv1.OriginRevisionKey, head))
			artifacts[name] = ea.Status.Artifact.Revision
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	}

	// The three Kustomizations, each at its ExternalArtifact's revision;
	// infra-configs waits for infra-controllers (its HelmReleases Ready:
	// wait: true), apps for infra-configs.
	controllers := waitApplied(ctx, t, types.NamespacedName{Namespace: fluxSystem, Name: "infra-controllers"}, artifacts["infrastructure"])
	configs := waitApplied(ctx, t, types.NamespacedName{Namespace: fluxSystem, Name: "infra-configs"}, artifacts["infrastructure"])
	apps := waitApplied(ctx, t, types.NamespacedName{Namespace: fluxSystem, Name: "apps"}, artifacts["apps"])
	g.Expect(inventoryIDs(controllers.Status.Inventory)).To(ContainElements(
		"HelmRelease/cert-manager/cert-manager", "OCIRepository/cert-manager/cert-manager",
		"HelmRelease/envoy-gateway-system/envoy-gateway", "OCIRepository/envoy-gateway-system/gateway-helm"))
	g.Expect(inventoryIDs(configs.Status.Inventory)).To(ConsistOf(
		"ClusterIssuer//letsencrypt", "GatewayClass//envoy", "Gateway/envoy-gateway-system/envoy"))
	g.Expect(inventoryIDs(apps.Status.Inventory)).To(ConsistOf(
		"Namespace//podinfo", "HelmRepository/podinfo/podinfo", "HelmRelease/podinfo/podinfo"))

	// The sources and the releases. A release of an OCIRepository's
	// chart records, as Flux's, the chart version with the first 12
	// hex digits of the OCI manifest's digest (the artifact's revision
	// <tag>@sha256:<digest>) as build metadata.
	certManager := types.NamespacedName{Namespace: "cert-manager", Name: "cert-manager"}
	gatewayHelm := types.NamespacedName{Namespace: "envoy-gateway-system", Name: "gateway-helm"}
	ociCharts := map[types.NamespacedName]string{}
	for _, key := range []types.NamespacedName{certManager, gatewayHelm} {
		oci := waitObjectReady(ctx, t, sourcev1.GroupVersion.WithKind(sourcev1.OCIRepositoryKind), key.Namespace, key.Name)
		revision, _, _ := unstructured.NestedString(oci.Object, "status", "artifact", "revision")
		_, digest, _ := strings.Cut(revision, "@sha256:")
		g.Expect(digest).To(MatchRegexp(`^[0-9a-f]{64}$`), "OCIRepository %s: revision %q", key, revision)
		ociCharts[key] = digest[:12]
	}
	waitObjectReady(ctx, t, sourcev1.GroupVersion.WithKind(sourcev1.HelmRepositoryKind), "podinfo", "podinfo")
	releases := map[types.NamespacedName]string{
		certManager: "1.19.1+" + ociCharts[certManager],
		{Namespace: "envoy-gateway-system", Name: "envoy-gateway"}: "1.8.0+" + ociCharts[gatewayHelm],
		// apps/staging's range, ">=1.0.0-alpha", takes the pre-release.
		{Namespace: "podinfo", Name: "podinfo"}: "6.10.0-rc.1",
	}
	for key, version := range releases {
		hr := waitObjectReady(ctx, t, helmv2.GroupVersion.WithKind(helmv2.HelmReleaseKind), key.Namespace, key.Name)
		history, _, _ := unstructured.NestedSlice(hr.Object, "status", "history")
		g.Expect(history).NotTo(BeEmpty(), "HelmRelease %s has no history", key)
		chartVersion, _, _ := unstructured.NestedString(history[0].(map[string]any), "chartVersion")
		g.Expect(chartVersion).To(Equal(version), "HelmRelease %s", key)
	}
	for _, key := range []types.NamespacedName{
		{Namespace: "cert-manager", Name: "cert-manager"},
		{Namespace: "envoy-gateway-system", Name: "envoy-gateway"},
		{Namespace: "podinfo", Name: "podinfo"},
		{Namespace: "podinfo", Name: "podinfo-redis"},
	} {
		waitAvailable(ctx, g, key)
	}

	// What the values and patches say reached the cluster. cert-manager:
	// its CRDs rendered (crds.enabled) without Helm's keep policy
	// (crds.keep: false), its config written.
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Name: "clusterissuers.cert-manager.io"}, crd)).To(Succeed())
	g.Expect(crd.GetAnnotations()).NotTo(HaveKey("helm.sh/resource-policy"))
	config := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: "cert-manager", Name: "cert-manager"}, config)).To(Succeed())
	g.Expect(config.Data["config.yaml"]).To(ContainSubstring("enableGatewayAPI: true"))
	// infra-configs' patch on the ClusterIssuer.
	issuer := getObject(ctx, g, schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "ClusterIssuer"}, "", "letsencrypt")
	server, _, _ := unstructured.NestedString(issuer.Object, "spec", "acme", "server")
	g.Expect(server).To(Equal("https://acme-staging-v02.api.letsencrypt.org/directory"))
	// podinfo: redis as the base's values say, the HTTPRoute's hostnames
	// as apps/staging's patch says, on the Gateway of infra-configs.
	redis := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: "podinfo", Name: "podinfo-redis"}, redis)).To(Succeed())
	g.Expect(redis.Spec.Template.Spec.Containers[0].Image).To(Equal("public.ecr.aws/docker/library/redis:8.6.2"))
	route := getObject(ctx, g, schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"}, "podinfo", "podinfo")
	hostnames, _, _ := unstructured.NestedStringSlice(route.Object, "spec", "hostnames")
	g.Expect(hostnames).To(Equal([]string{"podinfo.staging"}))
	parents, _, _ := unstructured.NestedSlice(route.Object, "spec", "parentRefs")
	g.Expect(parents).To(Equal([]any{map[string]any{"name": "envoy", "namespace": "envoy-gateway-system", "sectionName": "http"}}))
	getObject(ctx, g, schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "Gateway"}, "envoy-gateway-system", "envoy")
	// test.enable: false: the chart's test Pod never ran.
	err = env.Client.Get(ctx, types.NamespacedName{Namespace: "podinfo", Name: "podinfo-grpc-test"}, &corev1.Pod{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the chart's test Pod: want NotFound, got %v", err)
}

// fluxReferenceFiles reads fluxReferenceDir into a working copy's files
// with the rewrites made; each rewrite's old text must be in its file
// exactly once, so a fixture that drifted from the rewrites fails here.
func fluxReferenceFiles(g *WithT, rewrites []rewrite) map[string]string {
	files := map[string]string{}
	g.Expect(filepath.WalkDir(fluxReferenceDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(fluxReferenceDir, path)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})).To(Succeed())
	for _, r := range rewrites {
		g.Expect(strings.Count(files[r.file], r.old)).To(Equal(1), "%s: %q", r.file, r.old)
		files[r.file] = strings.Replace(files[r.file], r.old, r.new, 1)
	}
	return files
}

// waitObjectReady waits until the object is Ready=True for its current
// generation, read as kstatus reads it (any kind with conditions), and
// returns it.
func waitObjectReady(ctx context.Context, t *testing.T, gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	var obj *unstructured.Unstructured
	NewWithT(t).Eventually(func(g Gomega) {
		obj = getObject(ctx, g, gvk, namespace, name)
		ready := objectCondition(obj, "Ready")
		g.Expect(ready).NotTo(BeNil(), "%s %s/%s has no Ready condition", gvk.Kind, namespace, name)
		g.Expect(ready["status"]).To(Equal("True"), "%s %s/%s: %v", gvk.Kind, namespace, name, ready)
		observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
		g.Expect(observed).To(Equal(obj.GetGeneration()), "%s %s/%s: status.observedGeneration", gvk.Kind, namespace, name)
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "%s %s/%s did not become Ready", gvk.Kind, namespace, name)
	t.Logf("%s %s/%s: Ready: %v", gvk.Kind, namespace, name, objectCondition(obj, "Ready")["message"])
	return obj
}

// getObject gets an object of any kind; an error of the Get fails g.
func getObject(ctx context.Context, g Gomega, gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)).To(Succeed(), "%s %s/%s", gvk.Kind, namespace, name)
	return obj
}

// objectCondition returns the status condition of type t, or nil.
func objectCondition(obj *unstructured.Unstructured, t string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == t {
			return m
		}
	}
	return nil
}

// waitAvailable waits until a Deployment has its replicas available (the
// pod simulator runs its Pods).
func waitAvailable(ctx context.Context, g *WithT, key types.NamespacedName) {
	g.Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, key, d)).To(Succeed())
		g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
		g.Expect(d.Status.AvailableReplicas).To(Equal(*d.Spec.Replicas))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "Deployment %s", key)
}
