package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/testtar"
)

const deployYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  labels: {app: api}
spec:
  replicas: 1
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
    spec:
      containers:
      - name: api
        image: ghcr.io/example/api:v1.0.0
`

const serviceYAML = `apiVersion: v1
kind: Service
metadata:
  name: api
spec:
  selector: {app: api}
  ports:
  - port: 8080
`

func cm(name, data string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  %s\n", name, data)
}

// Each scenario renders a source tree with a spec and checks what the
// served manifests hold.
func TestRenderScenarios(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		setup   func(t *testing.T, ns string)
		spec    func(*kustomizev1.KustomizationSpec)
		objects int
		want    []string
		notWant []string
	}{
		{
			name: "plain YAML dir",
			files: map[string]string{
				"deploy/app/deploy.yaml":  deployYAML,
				"deploy/app/service.yaml": serviceYAML,
				"deploy/cm.yaml":          cm("settings", "a: b"),
				"deploy/values.yaml":      "replicas: 3\n",
				"README.md":               "# readme\n",
			},
			spec:    func(s *kustomizev1.KustomizationSpec) { s.Path = "./deploy" },
			objects: 3,
			want:    []string{"kind: Deployment", "kind: Service", "name: settings"},
			notWant: []string{"replicas: 3\n---"},
		},
		{
			name: "overlay with patches and images",
			files: map[string]string{
				"base/kustomization.yaml":   "resources: [deploy.yaml, service.yaml]\n",
				"base/deploy.yaml":          deployYAML,
				"base/service.yaml":         serviceYAML,
				"prod/kustomization.yaml":   "resources: [../base]\npatches:\n- path: replicas.yaml\n",
				"prod/replicas.yaml":        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  replicas: 4\n",
				"prod/unreferenced-cm.yaml": cm("nope", "a: b"),
				"components/x/notused.yaml": cm("nope2", "a: b"),
			},
			spec: func(s *kustomizev1.KustomizationSpec) {
				s.Path = "prod"
				s.NamePrefix = "shop-"
				s.Images = []kustomizev1.Image{{Name: "ghcr.io/example/api", NewTag: "v2.0.0"}}
				s.Patches = []kustomizev1.Patch{
					{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\n  annotations: {patched: smp}\n"},
					{Patch: `[{"op": "replace", "path": "/spec/ports/0/port", "value": 9090}]`, Target: &kustomizev1.Selector{Kind: "Service"}},
				}
			},
			objects: 2,
			want:    []string{"name: shop-api", "replicas: 4", "image: ghcr.io/example/api:v2.0.0", "patched: smp", "port: 9090"},
			notWant: []string{"nope"},
		},
		{
			name:    "targetNamespace",
			files:   map[string]string{"cm.yaml": cm("settings", "a: b") + "---\n" + strings.Replace(cm("other", "c: d"), "name: other", "name: other\n  namespace: elsewhere", 1)},
			spec:    func(s *kustomizev1.KustomizationSpec) { s.TargetNamespace = "team-a" },
			objects: 2,
			want:    []string{"name: settings\n  namespace: team-a", "name: other\n  namespace: team-a"},
			notWant: []string{"elsewhere"},
		},
		{
			name: "components",
			files: map[string]string{
				"app/kustomization.yaml": "resources: [deploy.yaml]\n",
				"app/deploy.yaml":        deployYAML,
				"components/ha/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n" +
					"patches:\n- patch: |-\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata:\n      name: api\n    spec:\n      replicas: 5\n",
				"components/pdb/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [pdb.yaml]\n",
				"components/pdb/pdb.yaml":           "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: api\nspec:\n  maxUnavailable: 1\n",
			},
			spec: func(s *kustomizev1.KustomizationSpec) {
				s.Path = "app"
				s.Components = []string{"../components/ha", "../components/pdb"}
			},
			objects: 2,
			want:    []string{"replicas: 5", "kind: PodDisruptionBudget"},
		},
		{
			// Flux's ignoreMissingComponents and buildMetadata, read from
			// the object the API server stored.
			name: "missing component ignored, origins annotated",
			files: map[string]string{
				"app/deploy.yaml": deployYAML,
				"components/ha/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n" +
					"patches:\n- patch: |-\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata:\n      name: api\n    spec:\n      replicas: 5\n",
			},
			spec: func(s *kustomizev1.KustomizationSpec) {
				s.Path = "app"
				s.Components = []string{"../components/ha", "../components/only-in-prod"}
				s.IgnoreMissingComponents = true
				s.BuildMetadata = []kustomizev1.BuildMetadataOption{kustomizev1.BuildMetadataOriginAnnotations}
			},
			objects: 1,
			want:    []string{"replicas: 5", "config.kubernetes.io/origin: |\n      path: deploy.yaml\n"},
			notWant: []string{"only-in-prod", "../source"},
		},
		{
			name: "substitution from ConfigMap and Secret with defaults and escapes",
			files: map[string]string{
				"app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-${env}\ndata:\n" +
					"  region: ${region}\n  tier: ${tier:=standard}\n  password: ${password}\n" +
					"  escaped: $${literal}\n  override: ${override}\n",
			},
			setup: func(t *testing.T, ns string) {
				g := NewWithT(t)
				g.Expect(k8s.Create(context.Background(), &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vars"},
					Data:       map[string]string{"region": "eu-west-1", "env": "from-configmap", "override": "configmap"},
				})).To(Succeed())
				g.Expect(k8s.Create(context.Background(), &corev1.Secret{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
					StringData: map[string]string{"password": "hunter2-secret", "override": "secret"},
				})).To(Succeed())
			},
			spec: func(s *kustomizev1.KustomizationSpec) {
				s.PostBuild = &kustomizev1.PostBuild{
					Substitute: map[string]string{"env": "prod"},
					SubstituteFrom: []kustomizev1.SubstituteReference{
						{Kind: "ConfigMap", Name: "vars"},
						{Kind: "Secret", Name: "creds"},
						{Kind: "ConfigMap", Name: "absent", Optional: true},
					},
				}
			},
			objects: 1,
			want: []string{"name: app-prod", "region: eu-west-1", "tier: standard", "password: hunter2-secret",
				"escaped: ${literal}", "override: secret"},
		},
		{
			// Argo CD's jsonnet-guestbook-tla with spec.jsonnet, read from
			// the object the API server stored; a YAML file beside it.
			name: "jsonnet with top-level arguments and an external variable",
			files: map[string]string{
				"guestbook/guestbook-ui.jsonnet": jsonnetGuestbookTLA,
				"guestbook/cm.jsonnet":           `{apiVersion: "v1", kind: "ConfigMap", metadata: {name: std.extVar("cm")}, data: {a: "b"}}`,
				"guestbook/extra.yaml":           cm("extra", "a: b"),
			},
			spec: func(s *kustomizev1.KustomizationSpec) {
				s.Path = "guestbook"
				s.Jsonnet = &kustomizev1.Jsonnet{
					ExtVars: []kustomizev1.JsonnetVar{{Name: "cm", Value: "from-jsonnet"}},
					TLAs:    []kustomizev1.JsonnetVar{{Name: "name", Value: "tla-guestbook"}, {Name: "replicas", Value: "1 + 1", Code: true}},
				}
			},
			objects: 4,
			want:    []string{"name: tla-guestbook", "replicas: 2", "kind: Service", "name: from-jsonnet", "name: extra"},
			notWant: []string{"jsonnet-guestbook-ui"},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := namespace(t)
			if tt.setup != nil {
				tt.setup(t, ns)
			}
			rev := fmt.Sprintf("%040d", i+1)
			gitRepo(t, ns, "repo", nil)
			publishTree(t, ns, "repo", rev, tt.files)
			kustomization(t, ns, "app", "repo", tt.spec)

			ks := waitRendered(t, ns, "app", metav1.ConditionTrue, kustomizev1.RenderSucceededReason)
			a := ks.Status.RenderedArtifact
			g.Expect(a).NotTo(BeNil())
			g.Expect(a.Revision).To(Equal("main@sha1:" + rev))
			g.Expect(a.Path).To(Equal(fmt.Sprintf("kustomization/%s/app/%s.yaml", ns, strings.TrimPrefix(a.Digest, "sha256:"))))
			g.Expect(renderedCondition(ks).Message).To(Equal(fmt.Sprintf("rendered %d objects from revision %q", tt.objects, a.Revision)))
			body := download(t, a)
			g.Expect(strings.Count(body, "\n---\n") + 1).To(Equal(tt.objects))
			for _, w := range tt.want {
				g.Expect(body).To(ContainSubstring(w))
			}
			for _, w := range tt.notWant {
				g.Expect(body).NotTo(ContainSubstring(w))
			}

			// The Rendered event carries the revision and object count;
			// no event ever carries a secret value.
			g.Eventually(func() []events.Event { return published.of(ns, "app", kustomizev1.RenderedReason) }, timeout, poll).Should(HaveLen(1))
			ev := published.of(ns, "app", kustomizev1.RenderedReason)[0]
			g.Expect(ev.Severity).To(Equal(events.SeverityInfo))
			g.Expect(ev.Revision).To(Equal(a.Revision))
			g.Expect(ev.Metadata).To(HaveKeyWithValue("objects", fmt.Sprint(tt.objects)))
			g.Expect(ev.Metadata).To(HaveKeyWithValue("digest", a.Digest))
			for _, e := range published.all(ns, "app") {
				g.Expect(e.Message).NotTo(ContainSubstring("hunter2"))
			}
			// It is on the stream only: no Kubernetes Event
			// (TestARenderIsOnNATSAndOnlyAFailedOneIsAKubernetesEvent).
		})
	}
}

// A bad archive or a bad commit is refused with its message, and the last
// good render stays in status and served.
func TestFailuresKeepLastGoodArtifact(t *testing.T) {
	good := map[string]string{"cm.yaml": cm("settings", "a: b")}
	big := strings.Repeat("x", int(testLimits.MaxExtractedBytes)+1)
	tests := []struct {
		name string
		// bad returns the bad artifact to publish at revision rev.
		bad        func(t *testing.T, ns, rev string) *meta.Artifact
		wantReason string
		wantMsg    []string
		wantEvent  bool
	}{
		{
			name: "tar-slip archive",
			bad: func(t *testing.T, ns, rev string) *meta.Artifact {
				data := testtar.TarGz(t, testtar.File("cm.yaml", cm("settings", "a: b")), testtar.File("../../../etc/evil.yaml", "x"))
				return sources.serve("/bad/"+ns+"/slip.tar.gz", rev, data, "")
			},
			wantReason: meta.ArtifactFailedReason,
			wantMsg:    []string{"was refused", `entry "../../../etc/evil.yaml" contains ".."`},
		},
		{
			name: "symlink escaping the root",
			bad: func(t *testing.T, ns, rev string) *meta.Artifact {
				data := testtar.TarGz(t, testtar.File("cm.yaml", cm("settings", "a: b")),
					testtar.Symlink("passwd.yaml", "../../../../etc/passwd"))
				return sources.serve("/bad/"+ns+"/link.tar.gz", rev, data, "")
			},
			wantReason: meta.ArtifactFailedReason,
			wantMsg:    []string{"was refused", `symlink "passwd.yaml" -> "../../../../etc/passwd" points outside the root`},
		},
		{
			name: "oversize archive",
			bad: func(t *testing.T, ns, rev string) *meta.Artifact {
				data := testtar.TarGz(t, testtar.File("cm.yaml", cm("settings", "a: b")), testtar.File("big.yaml", big))
				return sources.serve("/bad/"+ns+"/big.tar.gz", rev, data, "")
			},
			wantReason: meta.ArtifactFailedReason,
			wantMsg:    []string{"was refused", fmt.Sprintf("archive too large: extracting \"big.yaml\" would exceed the limit of %d extracted bytes", testLimits.MaxExtractedBytes)},
		},
		{
			name: "too many files",
			bad: func(t *testing.T, ns, rev string) *meta.Artifact {
				var es []testtar.Entry
				for i := 0; i <= testLimits.MaxFiles; i++ {
					es = append(es, testtar.File(fmt.Sprintf("f%03d.txt", i), "x"))
				}
				return sources.serve("/bad/"+ns+"/many.tar.gz", rev, testtar.TarGz(t, es...), "")
			},
			wantReason: meta.ArtifactFailedReason,
			wantMsg:    []string{fmt.Sprintf("too many files: the archive holds more than %d entries", testLimits.MaxFiles)},
		},
		{
			name: "digest mismatch",
			bad: func(t *testing.T, ns, rev string) *meta.Artifact {
				data := packTree(t, map[string]string{"cm.yaml": cm("settings", "tampered: yes")})
				return sources.serve("/bad/"+ns+"/tampered.tar.gz", rev, data, "sha256:"+strings.Repeat("ab", 32))
			},
			wantReason: meta.ArtifactFailedReason,
			wantMsg:    []string{"downloading the source artifact", "want sha256:" + strings.Repeat("ab", 32), "refusing a tampered or partial artifact"},
		},
		{
			name: "source artifact gone",
			bad: func(t *testing.T, ns, rev string) *meta.Artifact {
				a := sources.serve("/bad/"+ns+"/gone.tar.gz", rev, []byte("x"), "")
				a.URL = sourceURL + "/bad/" + ns + "/never-served.tar.gz"
				return a
			},
			wantReason: meta.ArtifactFailedReason,
			wantMsg:    []string{"downloading the source artifact", "404"},
		},
		{
			name: "remote base",
			bad: func(t *testing.T, ns, rev string) *meta.Artifact {
				data := packTree(t, map[string]string{
					"kustomization.yaml": "resources:\n- cm.yaml\n- https://github.com/example/repo//deploy?ref=v1\n",
					"cm.yaml":            cm("settings", "a: b"),
				})
				return sources.serve("/bad/"+ns+"/remote.tar.gz", rev, data, "")
			},
			wantReason: kustomizev1.RemoteResourceRefusedReason,
			wantMsg:    []string{`kustomization.yaml: resources "https://github.com/example/repo//deploy?ref=v1" refused`},
			wantEvent:  true,
		},
		{
			name: "builtin generator config that names a URL",
			bad: func(t *testing.T, ns, rev string) *meta.Artifact {
				data := packTree(t, map[string]string{
					"kustomization.yaml": "resources:\n- cm.yaml\ngenerators:\n- gen.yaml\n",
					"cm.yaml":            cm("settings", "a: b"),
					"gen.yaml":           "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: g\nfiles:\n- leaked=" + leakURL + "\n",
				})
				return sources.serve("/bad/"+ns+"/generator.tar.gz", rev, data, "")
			},
			wantReason: kustomizev1.RemoteResourceRefusedReason,
			wantMsg:    []string{`gen.yaml: ConfigMapGenerator.files "` + leakURL + `" refused`},
			wantEvent:  true,
		},
		{
			name: "YAML alias bomb",
			bad: func(t *testing.T, ns, rev string) *meta.Artifact {
				return sources.serve("/bad/"+ns+"/bomb.tar.gz", rev, packTree(t, map[string]string{"bomb.yaml": aliasBomb(8)}), "")
			},
			wantReason: meta.LimitExceededReason,
			wantMsg:    []string{"bomb.yaml", "YAML nodes", "--max-yaml-nodes"},
			wantEvent:  true,
		},
		{
			name: "rendered output over the limit",
			bad: func(t *testing.T, ns, rev string) *meta.Artifact {
				data := packTree(t, map[string]string{
					"kustomization.yaml": "configMapGenerator:\n- name: big\n  files:\n  - data.txt\n",
					"data.txt":           strings.Repeat("y", int(testRenderLimits.MaxOutputBytes)),
				})
				return sources.serve("/bad/"+ns+"/output.tar.gz", rev, data, "")
			},
			wantReason: meta.LimitExceededReason,
			wantMsg:    []string{fmt.Sprintf("the rendered manifests pass the limit of %d bytes (--max-rendered-size)", testRenderLimits.MaxOutputBytes)},
			wantEvent:  true,
		},
		{
			name: "render past its time limit",
			bad: func(t *testing.T, ns, rev string) *meta.Artifact {
				return sources.serve("/bad/"+ns+"/slow.tar.gz", rev, packTree(t, slowTree()), "")
			},
			wantReason: meta.LimitExceededReason,
			wantMsg:    []string{"rendering did not finish within its time limit of 3s (--render-timeout); its render worker was stopped"},
			wantEvent:  true,
		},
		{
			name: "jsonnet that recurses without end",
			bad: func(t *testing.T, ns, rev string) *meta.Artifact {
				data := packTree(t, map[string]string{"main.jsonnet": "local f(x) = f(x + 1);\nf(0)\n"})
				return sources.serve("/bad/"+ns+"/recursion.tar.gz", rev, data, "")
			},
			wantReason: kustomizev1.BuildFailedReason,
			wantMsg:    []string{"evaluating main.jsonnet: RUNTIME ERROR: max stack frames exceeded.", "main.jsonnet:1:"},
			wantEvent:  true,
		},
		{
			// 2^40 calls at most 41 deep: it would run for days in little
			// memory; go-jsonnet takes no context, the worker is killed.
			name: "jsonnet past its time limit",
			bad: func(t *testing.T, ns, rev string) *meta.Artifact {
				data := packTree(t, map[string]string{"main.jsonnet": "local f(n) = if n == 0 then 0 else f(n - 1) + f(n - 1);\nf(40)\n"})
				return sources.serve("/bad/"+ns+"/jsonnet-slow.tar.gz", rev, data, "")
			},
			wantReason: meta.LimitExceededReason,
			wantMsg:    []string{"rendering did not finish within its time limit of 3s (--render-timeout); its render worker was stopped"},
			wantEvent:  true,
		},
		{
			name: "jsonnet with a huge std.range",
			bad: func(t *testing.T, ns, rev string) *meta.Artifact {
				data := packTree(t, map[string]string{"main.jsonnet": "std.range(1, 1000000000)\n"})
				return sources.serve("/bad/"+ns+"/jsonnet-range.tar.gz", rev, data, "")
			},
			wantReason: meta.LimitExceededReason,
			wantMsg:    []string{"rendering passed its memory limit of"},
			wantEvent:  true,
		},
		{
			name: "duplicate objects",
			bad: func(t *testing.T, ns, rev string) *meta.Artifact {
				data := packTree(t, map[string]string{"a.yaml": cm("settings", "a: b"), "b.yaml": cm("settings", "a: c")})
				return sources.serve("/bad/"+ns+"/dup.tar.gz", rev, data, "")
			},
			wantReason: kustomizev1.ValidationFailedReason,
			wantMsg:    []string{"duplicate object ConfigMap default/settings: defined in a.yaml (document 1) and in b.yaml (document 1)"},
			wantEvent:  true,
		},
		{
			name: "invalid YAML",
			bad: func(t *testing.T, ns, rev string) *meta.Artifact {
				data := packTree(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [oops\n"})
				return sources.serve("/bad/"+ns+"/invalid.tar.gz", rev, data, "")
			},
			wantReason: kustomizev1.BuildFailedReason,
			wantMsg:    []string{"invalid YAML in cm.yaml"},
			wantEvent:  true,
		},
		{
			name: "kustomize error",
			bad: func(t *testing.T, ns, rev string) *meta.Artifact {
				data := packTree(t, map[string]string{"kustomization.yaml": "resources: [missing.yaml]\n"})
				return sources.serve("/bad/"+ns+"/kerr.tar.gz", rev, data, "")
			},
			wantReason: kustomizev1.BuildFailedReason,
			wantMsg:    []string{"kustomize build failed", "missing.yaml"},
			wantEvent:  true,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := namespace(t)
			waitIdleWorker(t, reconciler.pool) // the last case may have had its worker killed
			goodRev := fmt.Sprintf("%040d", 100+i)
			gitRepo(t, ns, "repo", nil)
			publishTree(t, ns, "repo", goodRev, good)
			kustomization(t, ns, "app", "repo", nil)
			ks := waitRevision(t, ns, "app", "main@sha1:"+goodRev)
			last := ks.Status.RenderedArtifact.DeepCopy()
			lastBody := download(t, last)

			bad := tt.bad(t, ns, "main@sha1:bad"+goodRev[3:])
			setArtifact(t, ns, "repo", bad)

			ks = waitRendered(t, ns, "app", metav1.ConditionFalse, tt.wantReason)
			msg := renderedCondition(ks).Message
			for _, m := range tt.wantMsg {
				g.Expect(msg).To(ContainSubstring(m))
			}
			g.Expect(msg).To(ContainSubstring(fmt.Sprintf("still serving the render of revision %q", last.Revision)))
			g.Expect(ks.Status.RenderedArtifact).To(Equal(last), "the last good artifact stays in status")
			g.Expect(download(t, ks.Status.RenderedArtifact)).To(Equal(lastBody), "and is still served")

			if tt.wantEvent {
				g.Eventually(func(g Gomega) {
					evs := published.of(ns, "app", tt.wantReason)
					g.Expect(evs).NotTo(BeEmpty())
					g.Expect(evs[0].Severity).To(Equal(events.SeverityError))
					g.Expect(evs[0].Message).To(ContainSubstring(tt.wantMsg[0]))
				}, timeout, poll).Should(Succeed())
			}

			// A good commit after the bad one renders again, once the
			// worker a limit killed is replaced.
			waitIdleWorker(t, reconciler.pool)
			fixedRev := fmt.Sprintf("%040d", 200+i)
			publishTree(t, ns, "repo", fixedRev, map[string]string{"cm.yaml": cm("settings", "fixed: yes")})
			ks = waitRevision(t, ns, "app", "main@sha1:"+fixedRev)
			g.Expect(download(t, ks.Status.RenderedArtifact)).To(ContainSubstring("fixed: \"yes\""))
		})
	}
}

func TestSourceRevisionChangeRerenders(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	gitRepo(t, ns, "repo", nil)
	publishTree(t, ns, "repo", "1111111111111111111111111111111111111111", map[string]string{"cm.yaml": cm("settings", "v: one")})
	kustomization(t, ns, "app", "repo", nil)
	ks := waitRevision(t, ns, "app", "main@sha1:1111111111111111111111111111111111111111")
	first := ks.Status.RenderedArtifact.DeepCopy()
	g.Expect(download(t, first)).To(ContainSubstring("v: one"))

	// Only the GitRepository changes: the watch brings the new revision in,
	// long before the Kustomization's one-hour interval.
	publishTree(t, ns, "repo", "2222222222222222222222222222222222222222", map[string]string{"cm.yaml": cm("settings", "v: two")})
	ks = waitRevision(t, ns, "app", "main@sha1:2222222222222222222222222222222222222222")
	g.Expect(ks.Status.RenderedArtifact.Digest).NotTo(Equal(first.Digest))
	g.Expect(download(t, ks.Status.RenderedArtifact)).To(ContainSubstring("v: two"))
	g.Eventually(func() []events.Event { return published.of(ns, "app", kustomizev1.RenderedReason) }, timeout, poll).Should(HaveLen(2))
	// Retention keeps both files (--artifact-retention-records 2).
	g.Expect(storage.Exists(first)).To(BeTrue())
}

func TestUnchangedSourceDoesNotRebuild(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	gitRepo(t, ns, "repo", nil)
	publishTree(t, ns, "repo", "3333333333333333333333333333333333333333", map[string]string{"cm.yaml": cm("settings", "a: b")})
	kustomization(t, ns, "app", "repo", nil)
	ks := waitRevision(t, ns, "app", "main@sha1:3333333333333333333333333333333333333333")
	key := types.NamespacedName{Namespace: ns, Name: "app"}
	builds := reconciler.Builds(key)
	g.Expect(builds).To(BeNumerically(">=", 1))
	reconciles := reconciler.Reconciles(key)
	before := ks.Status.RenderedArtifact.DeepCopy()

	// Ask for a reconcile: it runs, but finds nothing changed.
	requestReconcile(t, ns, "app")
	g.Eventually(func() int64 { return reconciler.Reconciles(key) }, timeout, poll).Should(BeNumerically(">", reconciles))
	g.Expect(reconciler.Builds(key)).To(Equal(builds), "an unchanged source and spec must not rebuild")
	g.Expect(getKS(g, ns, "app").Status.RenderedArtifact).To(Equal(before), "nor touch the artifact or its lastUpdateTime")

	// The same bytes under a new source revision do rebuild (the digest
	// key changed) but keep the content digest.
	publishTree(t, ns, "repo", "4444444444444444444444444444444444444444", map[string]string{"cm.yaml": cm("settings", "a: b"), "README.md": "new\n"})
	ks = waitRevision(t, ns, "app", "main@sha1:4444444444444444444444444444444444444444")
	g.Expect(reconciler.Builds(key)).To(Equal(builds + 1))
	g.Expect(ks.Status.RenderedArtifact.Digest).To(Equal(before.Digest))

	// A change of substituteFrom data is part of the key too.
	g.Expect(k8s.Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vars"}, Data: map[string]string{"x": "1"},
	})).To(Succeed())
	patch := client.MergeFrom(ks.DeepCopy())
	ks.Spec.PostBuild = &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "ConfigMap", Name: "vars"}}}
	g.Expect(k8s.Patch(context.Background(), ks, patch)).To(Succeed())
	waitRendered(t, ns, "app", metav1.ConditionTrue, kustomizev1.RenderSucceededReason)
	g.Expect(reconciler.Builds(key)).To(Equal(builds + 2))
	reconciles = reconciler.Reconciles(key)
	var vars corev1.ConfigMap
	g.Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "vars"}, &vars)).To(Succeed())
	vars.Data["x"] = "2"
	g.Expect(k8s.Update(context.Background(), &vars)).To(Succeed())
	requestReconcile(t, ns, "app")
	g.Eventually(func() int64 { return reconciler.Builds(key) }, timeout, poll).Should(Equal(builds + 3))
	g.Expect(reconciler.Reconciles(key)).To(BeNumerically(">", reconciles))
}

// render-controller applies only its own status fields: conditions and
// fields that sync-controller applied under its own manager survive. Its
// cache keeps of them only what the render reads (TrimKustomization), and
// what it reads still works: the render a history entry names outlives the
// store's retention of two.
func TestSyncControllerStatusSurvives(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	gitRepo(t, ns, "repo", nil)
	publishTree(t, ns, "repo", "5555555555555555555555555555555555555555", map[string]string{"cm.yaml": cm("settings", "a: b")})
	kustomization(t, ns, "app", "repo", nil)
	first := waitRevision(t, ns, "app", "main@sha1:5555555555555555555555555555555555555555").Status.RenderedArtifact.DeepCopy()

	// sync-controller's share, applied as it would: its own manager.
	syncStatus := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kustomizev1.GroupVersion.String(), "kind": kustomizev1.KustomizationKind,
		"metadata": map[string]any{"name": "app", "namespace": ns},
		"status": map[string]any{
			"observedGeneration":  int64(1),
			"lastAppliedRevision": "main@sha1:5555555555555555555555555555555555555555",
			"conditions": []any{map[string]any{
				"type": "Ready", "status": "True", "reason": "Succeeded", "message": "applied by sync",
				"observedGeneration": int64(1), "lastTransitionTime": "2026-01-01T00:00:00Z",
			}},
			"inventory": map[string]any{"entries": []any{map[string]any{"id": ns + "_settings__ConfigMap", "v": "v1"}}},
			"history": []any{map[string]any{
				"digest": first.Digest, "firstReconciled": "2026-01-01T00:00:00Z", "lastReconciled": "2026-01-01T00:00:00Z",
				"lastReconciledDuration": "1s", "lastReconciledStatus": "Succeeded", "totalReconciliations": int64(1),
			}},
		},
	}}
	g.Expect(k8s.Status().Apply(context.Background(), client.ApplyConfigurationFromUnstructured(syncStatus), client.FieldOwner("plumb-sync"), client.ForceOwnership)).To(Succeed())

	// The cache has the history entry's digest, and none of what the
	// render does not read.
	key := types.NamespacedName{Namespace: ns, Name: "app"}
	cached := &kustomizev1.Kustomization{}
	g.Eventually(func(g Gomega) {
		g.Expect(reconciler.Client.Get(context.Background(), key, cached)).To(Succeed())
		g.Expect(cached.Status.History).To(HaveLen(1))
	}, timeout, poll).Should(Succeed())
	g.Expect(cached.Status.History[0].Digest).To(Equal(first.Digest))
	g.Expect(cached.Status.Inventory).To(BeNil())
	g.Expect(cached.Status.LastAppliedRevision).To(BeEmpty())
	g.Expect(cached.Status.Conditions).To(HaveLen(1))
	g.Expect(cached.Status.Conditions[0].Type).To(Equal(kustomizev1.RenderedCondition))
	g.Expect(cached.Status.RenderedArtifact).To(Equal(first))

	// Two new revisions make render-controller write its status again,
	// and push the first render out of the retention of two.
	publishTree(t, ns, "repo", "7777777777777777777777777777777777777777", map[string]string{"cm.yaml": cm("settings", "a: d")})
	waitRevision(t, ns, "app", "main@sha1:7777777777777777777777777777777777777777")
	publishTree(t, ns, "repo", "6666666666666666666666666666666666666666", map[string]string{"cm.yaml": cm("settings", "a: c")})
	ks := waitRevision(t, ns, "app", "main@sha1:6666666666666666666666666666666666666666")
	g.Expect(storage.Exists(first)).To(BeTrue(), "the render status.history names is kept")
	g.Expect(download(t, first)).To(ContainSubstring("a: b"))
	g.Expect(ks.Status.Inventory).NotTo(BeNil(), "sync-controller's inventory survives")
	g.Expect(ks.Status.Inventory.Entries).To(HaveLen(1))
	g.Expect(ks.Status.History).To(HaveLen(1))
	g.Expect(ks.Status.History[0].TotalReconciliations).To(Equal(int64(1)))

	var ready *metav1.Condition
	for i := range ks.Status.Conditions {
		if ks.Status.Conditions[i].Type == meta.ReadyCondition {
			ready = &ks.Status.Conditions[i]
		}
	}
	g.Expect(ready).NotTo(BeNil(), "sync-controller's Ready condition survives")
	g.Expect(ready.Message).To(Equal("applied by sync"))
	g.Expect(ks.Status.ObservedGeneration).To(Equal(int64(1)))
	g.Expect(ks.Status.LastAppliedRevision).To(Equal("main@sha1:5555555555555555555555555555555555555555"))

	// And render-controller's manager owns nothing but its own fields.
	found := false
	for _, mf := range ks.ManagedFields {
		if mf.Manager != FieldManager {
			continue
		}
		found = true
		g.Expect(mf.Subresource).To(Equal("status"))
		var fields map[string]map[string]any
		g.Expect(json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields)).To(Succeed())
		g.Expect(fields).To(HaveLen(1))
		var owned []string
		for k := range fields["f:status"] {
			owned = append(owned, k)
		}
		g.Expect(owned).To(ConsistOf("f:conditions", "f:renderedArtifact"))
		conds, _ := fields["f:status"]["f:conditions"].(map[string]any)
		var types []string
		for k := range conds {
			types = append(types, k)
		}
		g.Expect(types).To(ConsistOf(`k:{"type":"Rendered"}`))
	}
	g.Expect(found).To(BeTrue())
	// Render-controller never sets Ready, Reconciling or Stalled itself.
	ks2 := &kustomizev1.Kustomization{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(ks), ks2)).To(Succeed())
	for _, c := range ks2.Status.Conditions {
		g.Expect(c.Type).To(BeElementOf(kustomizev1.RenderedCondition, meta.ReadyCondition))
	}
}

func TestWaitsForSourceArtifact(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	kustomization(t, ns, "app", "repo", nil)
	ks := waitRendered(t, ns, "app", metav1.ConditionFalse, meta.DependencyNotReadyReason)
	g.Expect(renderedCondition(ks).Message).To(Equal(fmt.Sprintf("GitRepository %s/repo not found", ns)))
	g.Expect(ks.Status.RenderedArtifact).To(BeNil())

	gitRepo(t, ns, "repo", nil)
	g.Eventually(func(g Gomega) {
		g.Expect(renderedCondition(getKS(g, ns, "app")).Message).To(Equal(fmt.Sprintf("GitRepository %s/repo has no artifact yet", ns)))
	}, timeout, poll).Should(Succeed())

	publishTree(t, ns, "repo", "7777777777777777777777777777777777777777", map[string]string{"cm.yaml": cm("settings", "a: b")})
	waitRevision(t, ns, "app", "main@sha1:7777777777777777777777777777777777777777")
}

func TestCrossNamespaceSourceRefused(t *testing.T) {
	g := NewWithT(t)
	ns, other := namespace(t), namespace(t)
	gitRepo(t, other, "repo", nil)
	publishTree(t, other, "repo", "8888888888888888888888888888888888888888", map[string]string{"cm.yaml": cm("settings", "a: b")})
	kustomization(t, ns, "app", "repo", func(s *kustomizev1.KustomizationSpec) { s.SourceRef.Namespace = other })
	ks := waitRendered(t, ns, "app", metav1.ConditionFalse, meta.InvalidSpecReason)
	g.Expect(renderedCondition(ks).Message).To(ContainSubstring("cross-namespace references are not allowed"))
	g.Expect(ks.Status.RenderedArtifact).To(BeNil())
}

func TestSubstituteFromMissingObject(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	gitRepo(t, ns, "repo", nil)
	publishTree(t, ns, "repo", "9999999999999999999999999999999999999999", map[string]string{"cm.yaml": cm("settings", "a: ${a:=x}")})
	kustomization(t, ns, "app", "repo", func(s *kustomizev1.KustomizationSpec) {
		s.PostBuild = &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "Secret", Name: "missing"}}}
	})
	ks := waitRendered(t, ns, "app", metav1.ConditionFalse, kustomizev1.SubstituteFailedReason)
	g.Expect(renderedCondition(ks).Message).To(ContainSubstring(fmt.Sprintf("Secret %s/missing (postBuild.substituteFrom) not found", ns)))

	// A secret value that breaks a build never shows in status or events.
	g.Expect(k8s.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "missing"},
		StringData: map[string]string{"a": "topsecret: [unclosed"},
	})).To(Succeed())
	requestReconcile(t, ns, "app")
	g.Eventually(func(g Gomega) {
		ks := getKS(g, ns, "app")
		c := renderedCondition(ks)
		g.Expect(c.Message).To(ContainSubstring("not valid YAML after substitution"))
		g.Expect(c.Message).NotTo(ContainSubstring("topsecret"))
	}, timeout, poll).Should(Succeed())
	for _, e := range published.all(ns, "app") {
		g.Expect(e.Message).NotTo(ContainSubstring("topsecret"))
	}
}

// requestReconcile sets the requestedAt annotation to a new value.
func requestReconcile(t *testing.T, ns, name string) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, time.Now().Format(time.RFC3339Nano)))
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	NewWithT(t).Expect(k8s.Patch(context.Background(), ks, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

// A render's news reaches NATS on the object's subject: the Rendered event
// of a good render and the BuildFailed event of a failed one. Only the
// failure is a Kubernetes Event, a Warning: the first render of a
// Kustomization costs the API server no Event at all, counted by the
// requests render-controller sends and by the Events the API server holds
// (docs/design/events.md).
func TestARenderIsOnNATSAndOnlyAFailedOneIsAKubernetesEvent(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	nc, err := nats.Connect(env.NATSURL)
	g.Expect(err).NotTo(HaveOccurred())
	defer nc.Close()
	msgs := make(chan *nats.Msg, 16)
	sub, err := nc.ChanSubscribe(events.Subject(kustomizev1.KustomizationKind, ns, "app"), msgs)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = sub.Unsubscribe() }()
	g.Expect(nc.Flush()).To(Succeed())
	eventPosts := func() int {
		return apiRequests.Under("/namespaces/" + ns + "/")["POST /apis/events.k8s.io/v1/namespaces/"+ns+"/events"]
	}
	// kubeEvents lists the Kubernetes Events about the Kustomization, by
	// type and reason; a failed list fails the test.
	kubeEvents := func(g Gomega) map[string]int {
		var list eventsv1.EventList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		out := map[string]int{}
		for _, e := range list.Items {
			if e.Regarding.Kind == kustomizev1.KustomizationKind && e.Regarding.Name == "app" {
				out[e.Type+" "+e.Reason]++
			}
		}
		return out
	}

	gitRepo(t, ns, "repo", nil)
	publishTree(t, ns, "repo", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", map[string]string{"a.yaml": cm("one", "a: b"), "b.yaml": cm("two", "a: b")})
	kustomization(t, ns, "app", "repo", nil)
	waitRevision(t, ns, "app", "main@sha1:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")
	next := func() *events.Event {
		select {
		case m := <-msgs:
			e, err := events.Decode(m.Data)
			g.Expect(err).NotTo(HaveOccurred())
			return e
		case <-time.After(timeout):
			t.Fatal("no event on NATS")
			return nil
		}
	}
	e := next()
	g.Expect(e.Reason).To(Equal(kustomizev1.RenderedReason))
	g.Expect(e.Severity).To(Equal(events.SeverityInfo))
	g.Expect(e.Revision).To(Equal("main@sha1:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"))
	g.Expect(e.Metadata).To(HaveKeyWithValue("objects", "2"))
	g.Expect(e.ReportingController).To(Equal(ControllerName))
	// The Kubernetes Event of a Record is queued before its stream event:
	// had there been one, its POST would have been sent by now.
	g.Consistently(eventPosts, 2*time.Second, poll).Should(BeZero(), "the first render writes no Kubernetes Event")
	g.Expect(kubeEvents(g)).To(BeEmpty())

	publishTree(t, ns, "repo", "cccccccccccccccccccccccccccccccccccccccc", map[string]string{"kustomization.yaml": "resources: [gone.yaml]\n"})
	waitRendered(t, ns, "app", metav1.ConditionFalse, kustomizev1.BuildFailedReason)
	e = next()
	g.Expect(e.Reason).To(Equal(kustomizev1.BuildFailedReason))
	g.Expect(e.Severity).To(Equal(events.SeverityError))
	g.Expect(e.Message).To(ContainSubstring("gone.yaml"))
	// The failure is on the object too, as a Warning; its retries may add
	// more of the same, and nothing else.
	g.Eventually(kubeEvents, timeout, poll).Should(HaveKey("Warning "+kustomizev1.BuildFailedReason), "the failed render is a Kubernetes Event")
	got := kubeEvents(g)
	g.Expect(got).To(HaveLen(1), "only the failure is a Kubernetes Event: %v", got)
	g.Expect(eventPosts()).To(BeNumerically(">=", 1))
}

// A fleet shares its repositories: every Kustomization of one revision
// renders from one download and one extracted tree (internal/sourcetree),
// and no render writes into that tree (each folder here has no
// kustomization.yaml, so each build generates one, in memory).
func TestKustomizationsOfOneRevisionShareOneDownload(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	gitRepo(t, ns, "repo", nil)
	const apps = 6
	files := map[string]string{}
	for i := range apps {
		files[fmt.Sprintf("apps/app-%d/cm.yaml", i)] = cm(fmt.Sprintf("settings-%d", i), fmt.Sprintf("app: %q", fmt.Sprint(i)))
	}
	revision := "5555555555555555555555555555555555555555"
	a := publishTree(t, ns, "repo", revision, files)
	for i := range apps {
		kustomization(t, ns, fmt.Sprintf("app-%d", i), "repo", func(s *kustomizev1.KustomizationSpec) {
			s.Path = fmt.Sprintf("apps/app-%d", i)
		})
	}
	for i := range apps {
		ks := waitRevision(t, ns, fmt.Sprintf("app-%d", i), "main@sha1:"+revision)
		out := download(t, ks.Status.RenderedArtifact)
		g.Expect(out).To(ContainSubstring(fmt.Sprintf("name: settings-%d", i)))
		g.Expect(strings.Count(out, "kind: ConfigMap")).To(Equal(1), "each renders its own folder only")
	}
	g.Expect(sources.downloads(a)).To(Equal(1), "one download for the revision")

	tree, err := reconciler.trees.Acquire(context.Background(), a.Digest, func(context.Context) ([]byte, error) {
		return nil, errors.New("the tree must still be kept")
	})
	g.Expect(err).NotTo(HaveOccurred())
	defer tree.Release()
	var written []string
	g.Expect(filepath.WalkDir(render.SourceDir(tree.Dir), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(render.SourceDir(tree.Dir), p)
			if _, ok := files[filepath.ToSlash(rel)]; !ok {
				written = append(written, rel)
			}
		}
		return err
	})).To(Succeed())
	g.Expect(written).To(BeEmpty(), "the shared tree holds the artifact's files and nothing else")
}

// jsonnetGuestbookTLA is Argo CD's example jsonnet-guestbook-tla
// (pkg/render/testdata/jsonnet/argocd has it with its origin).
const jsonnetGuestbookTLA = `function (
    containerPort=80,
    image="gcr.io/google-samples/gb-frontend:v5",
    name="jsonnet-guestbook-ui",
    replicas=1,
    servicePort=80,
    type="LoadBalancer"
)
    [
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": { "name": name },
        "spec": {
            "ports": [ { "port": servicePort, "targetPort": containerPort } ],
            "selector": { "app": name },
            "type": type
        }
    },
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": { "name": name },
        "spec": {
            "replicas": replicas,
            "revisionHistoryLimit": 3,
            "selector": { "matchLabels": { "app": name } },
            "template": {
                "metadata": { "labels": { "app": name } },
                "spec": {
                    "containers": [ { "image": image, "name": name, "ports": [ { "containerPort": containerPort } ] } ]
                }
            }
        }
    }
    ]
`
