package argoconvert

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// Argo CD's names for the cluster it runs in.
const (
	inClusterServer = "https://kubernetes.default.svc"
	inClusterName   = "in-cluster"
	// defaultNamespace is where Argo CD keeps its objects unless told.
	defaultNamespace = "argocd"
	// cascadeFinalizer makes Argo CD delete an Application's objects with it.
	cascadeFinalizer = "resources-finalizer.argocd.argoproj.io"
)

// converter holds what one conversion shares.
type converter struct {
	opts Options
	n    *notes
	// template is true while an ApplicationSet's template is converted:
	// strings may hold Go template actions, and names cannot be derived
	// from them.
	template bool
	// repos names the GitRepositories already produced, by URL and
	// revision (a git generator's), so a template that reads the same
	// repository refers to it instead of making one per element.
	repos map[string]string
	// listElements are the elements of the ApplicationSet's list
	// generators, which a templated destination is looked up in.
	listElements []map[string]any
	// gitGenerators counts the git generators, to name their
	// GitRepositories.
	gitGenerators int
}

// app is what an Application's conversion needs besides its spec.
type app struct {
	name, namespace     string
	labels, annotations map[string]string
	deletionPolicy      kustomizev1.DeletionPolicy
}

func (c *converter) application(top, md *fields) []runtime.Object {
	a := c.appMeta(md)
	spec := top.obj("spec")
	if spec == nil {
		c.n.errf("spec: missing")
		return nil
	}
	return c.applicationSpec(a, spec)
}

// appMeta reads an Application's (or an ApplicationSet template's)
// metadata.
func (c *converter) appMeta(md *fields) app {
	a := app{namespace: defaultNamespace}
	if md == nil {
		c.n.errf("metadata: missing")
		return a
	}
	a.name = md.str("name")
	if a.name == "" {
		c.n.errf("%s: missing", md.at("name"))
	}
	if ns := md.str("namespace"); ns != "" {
		a.namespace = ns
	}
	if c.opts.Namespace != "" {
		a.namespace = c.opts.Namespace
	}
	a.labels = md.strMap("labels")
	a.annotations = md.strMap("annotations")
	// Without Argo CD's cascade finalizer, deleting the Application
	// leaves its objects; with it they are deleted, whatever prune says.
	a.deletionPolicy = kustomizev1.DeletionPolicy("Orphan")
	for _, f := range md.strs("finalizers") {
		switch {
		case f == cascadeFinalizer || strings.HasPrefix(f, cascadeFinalizer+"/"):
			a.deletionPolicy = kustomizev1.DeletionPolicy("Delete")
		default:
			c.n.addf("%s: finalizer %s not converted", md.at("finalizers"), f)
		}
	}
	md.ignore("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences")
	md.done()
	return a
}

// sync is the Application's syncPolicy as Plumb's fields.
type sync struct {
	manual          bool
	prune           bool
	selfHeal        bool
	allowEmpty      bool
	retry           *kustomizev1.RetryStrategy
	createNamespace bool
	nsLabels        map[string]string
	nsAnnotations   map[string]string
}

func (c *converter) applicationSpec(a app, spec *fields) []runtime.Object {
	var objs []runtime.Object
	project := spec.str("project")
	if project == "" {
		project = "default"
	}
	sa := projectServiceAccount(project)

	dest := spec.obj("destination")
	var targetNamespace string
	var kubeConfig *kustomizev1.KubeConfigReference
	if dest == nil {
		c.n.errf("spec.destination: missing")
	} else {
		targetNamespace = dest.str("namespace")
		kubeConfig = c.destinationCluster(dest)
		dest.done()
	}

	s := c.syncPolicy(spec.obj("syncPolicy"))
	ignore := c.ignoreDifferences(spec.objs("ignoreDifferences"))
	spec.skip("info", "Plumb's objects have no info links; keep them as annotations if they matter")
	spec.skip("revisionHistoryLimit", "Plumb keeps the last renders in status.history, a fixed number")
	spec.skip("sourceHydrator", "Plumb has no source hydrator")

	var sources []*fields
	if one := spec.obj("source"); one != nil {
		sources = append(sources, one)
	}
	sources = append(sources, spec.objs("sources")...)
	if len(sources) == 0 {
		c.n.errf("spec.source or spec.sources: missing")
	}
	// Sources with only a ref (a values repository for $ref/ value
	// files) render nothing of their own.
	var rendering []*fields
	refs := map[string]*fields{}
	for _, src := range sources {
		if r := src.str("ref"); r != "" {
			refs[r] = src
		}
		if src.has("path") || src.has("chart") || src.has("helm") || src.has("kustomize") || src.has("directory") || src.has("plugin") || !src.has("ref") {
			rendering = append(rendering, src)
		}
	}
	for _, r := range sortedKeys(refs) {
		src := refs[r]
		if !src.has("path") && !src.has("chart") {
			c.n.addf("%s: the ref source %s (%s) is not converted: Plumb's HelmRelease reads values files only from its chart's source; copy them into valuesFrom ConfigMaps or the chart", src.path, r, src.str("repoURL"))
			src.ignore("repoURL", "targetRevision", "ref", "name")
			src.done()
		}
	}

	if s.createNamespace && targetNamespace != "" {
		if c.template {
			c.n.addf("spec.syncPolicy.syncOptions: CreateNamespace=true: an ObjectSet writes only objects of its own namespace; create the namespace %s of each element by hand", targetNamespace)
		} else {
			ns := &corev1.Namespace{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
				ObjectMeta: metav1.ObjectMeta{Name: targetNamespace, Labels: s.nsLabels, Annotations: s.nsAnnotations},
			}
			objs = append(objs, ns)
			c.n.addf("spec.syncPolicy.syncOptions: CreateNamespace=true: the Namespace %s is written here; apply it once with the rest (the Kustomization does not create it)", targetNamespace)
		}
	}

	for i, src := range rendering {
		name := a.name
		if len(rendering) > 1 {
			name = fmt.Sprintf("%s-%d", a.name, i+1)
		}
		objs = append(objs, c.appSource(a, name, src, refs, renderSettings{
			targetNamespace: targetNamespace,
			serviceAccount:  sa,
			kubeConfig:      kubeConfig,
			sync:            s,
			ignore:          ignore,
		})...)
	}
	spec.done()
	return objs
}

// renderSettings are the Application-wide settings each source's
// Kustomization or HelmRelease gets.
type renderSettings struct {
	targetNamespace string
	serviceAccount  string
	kubeConfig      *kustomizev1.KubeConfigReference
	sync            sync
	ignore          []kustomizev1.IgnoreRule
}

// projectServiceAccount is the ServiceAccount an AppProject becomes
// (appProject) and its Applications impersonate.
func projectServiceAccount(project string) string {
	return "project-" + project
}

// destinationCluster is spec.kubeConfig for a destination other than the
// cluster Argo CD runs in: a Secret to create, named after the cluster.
func (c *converter) destinationCluster(dest *fields) *kustomizev1.KubeConfigReference {
	server, name := dest.str("server"), dest.str("name")
	switch {
	case server == "" && name == "", server == inClusterServer, name == inClusterName:
		return nil
	case c.template && (isTemplated(server) || isTemplated(name)):
		return c.templatedCluster(dest, server, name)
	}
	secret := name
	if secret == "" {
		secret = clusterSecretName(server)
	} else {
		secret = dnsName(secret)
	}
	what := "the cluster " + name
	if server != "" {
		what = "the cluster at " + server
	}
	c.n.addf("spec.destination: %s is not the one Plumb runs in: create the Secret %s with a kubeconfig for it under the key value (inline credentials only, docs/design/remote-clusters.md); Argo CD's cluster Secret holds the server and credentials to put in it", what, secret)
	return &kustomizev1.KubeConfigReference{SecretRef: kustomizev1.KubeConfigSecretRef{Name: secret, Key: "value"}}
}

var notDNS = regexp.MustCompile(`[^a-z0-9]+`)

// dnsName is s as a DNS label: lower case, other characters as dashes.
func dnsName(s string) string {
	s = strings.Trim(notDNS.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 63 {
		s = strings.Trim(s[:63], "-")
	}
	return s
}

// simpleAction is a template string that is one action reading one key.
var simpleAction = regexp.MustCompile(`^\{\{-?\s*\.([A-Za-z_][A-Za-z0-9_]*)\s*-?\}\}$`)

// kubeConfigSecretKey is the field the converter adds to list elements
// that name a remote cluster's server: its kubeconfig Secret's name.
const kubeConfigSecretKey = "kubeConfigSecret"

// templatedCluster is spec.kubeConfig for a destination the generators
// fill in. The clusters generator's elements are kubeconfig Secrets, so
// its {{server}} (or a destination.name) names the Secret to read; a
// server a list generator gives is looked up in its elements.
func (c *converter) templatedCluster(dest *fields, server, name string) *kustomizev1.KubeConfigReference {
	if name != "" {
		c.n.addf("%s: Plumb reads the cluster's kubeconfig from the Secret of that name (spec.kubeConfig.secretRef); the cluster Argo CD runs in has no Secret", dest.at("name"))
		return &kustomizev1.KubeConfigReference{SecretRef: kustomizev1.KubeConfigSecretRef{Name: name, Key: "value"}}
	}
	m := simpleAction.FindStringSubmatch(strings.TrimSpace(server))
	if m != nil && m[1] == "server" {
		c.n.addf("%s: the clusters generator's elements are kubeconfig Secrets in Plumb, read through spec.kubeConfig.secretRef; the cluster Argo CD runs in is not one of them", dest.at("server"))
		return &kustomizev1.KubeConfigReference{SecretRef: kustomizev1.KubeConfigSecretRef{Name: "{{ .name }}", Key: "value"}}
	}
	if m != nil && len(c.listElements) > 0 {
		local, remote := 0, 0
		for _, e := range c.listElements {
			v, _ := e[m[1]].(string)
			switch {
			case v == inClusterServer:
				local++
			case strings.HasPrefix(v, "https://") || strings.HasPrefix(v, "http://"):
				remote++
			}
		}
		switch {
		case local == len(c.listElements):
			return nil
		case remote == len(c.listElements):
			var secrets []string
			for _, e := range c.listElements {
				secret := clusterSecretName(e[m[1]].(string))
				e[kubeConfigSecretKey] = secret
				secrets = append(secrets, secret)
			}
			c.n.addf("%s: each list element names its cluster's kubeconfig Secret in %s: create the Secrets %s with a kubeconfig under the key value", dest.at("server"), kubeConfigSecretKey, strings.Join(uniqueSorted(secrets), ", "))
			return &kustomizev1.KubeConfigReference{SecretRef: kustomizev1.KubeConfigSecretRef{Name: "{{ ." + kubeConfigSecretKey + " }}", Key: "value"}}
		}
	}
	c.n.errf("%s: %s: Plumb reads another cluster from a kubeconfig Secret, which this server cannot name; write destination.name (the Secret's name) in the template, or use the clusters generator's {{server}}", dest.at("server"), server)
	return nil
}

// clusterSecretName names the kubeconfig Secret of a server URL.
func clusterSecretName(server string) string {
	host := server
	if i := strings.Index(host, "://"); i >= 0 {
		host = host[i+3:]
	}
	return dnsName("cluster-" + host)
}

// policy is the Kustomization's or HelmRelease's spec.syncPolicy: Manual
// where Argo CD syncs by hand, else left to its default, Automatic.
func (s sync) policy() kustomizev1.SyncPolicy {
	if s.manual {
		return kustomizev1.SyncPolicyManual
	}
	return ""
}

// syncPolicy maps spec.syncPolicy.
func (c *converter) syncPolicy(sp *fields) sync {
	s := sync{manual: true}
	if sp == nil {
		c.n.addf("spec.syncPolicy: none, Argo CD syncs by hand: it is converted with syncPolicy: Manual, which renders and compares every revision and applies it when asked (plumb sync)")
		return s
	}
	if auto := sp.obj("automated"); auto != nil {
		s.manual = auto.has("enabled") && !auto.boolean("enabled")
		s.prune = auto.boolean("prune")
		s.selfHeal = auto.boolean("selfHeal")
		s.allowEmpty = auto.boolean("allowEmpty")
		auto.done()
	}
	if s.manual {
		c.n.addf("spec.syncPolicy.automated: not set, Argo CD syncs by hand: it is converted with syncPolicy: Manual, which renders and compares every revision and applies it when asked (plumb sync)")
	}
	if r := sp.obj("retry"); r != nil {
		s.retry = &kustomizev1.RetryStrategy{}
		if l, ok := r.integer("limit"); ok {
			if l < 0 {
				l = -1
			}
			s.retry.Limit = l
		}
		if b := r.obj("backoff"); b != nil {
			s.retry.Backoff = &kustomizev1.RetryBackoff{}
			if d := b.str("duration"); d != "" {
				s.retry.Backoff.Duration = c.duration(b.at("duration"), d)
			}
			if f, ok := b.integer("factor"); ok {
				s.retry.Backoff.Factor = &f
			}
			if d := b.str("maxDuration"); d != "" {
				s.retry.Backoff.MaxDuration = c.duration(b.at("maxDuration"), d)
			}
			b.skip("jitter", "Plumb's backoff has no jitter")
			b.done()
		}
		r.skip("refresh", "Plumb retries the revision it failed on; a new revision is synced as soon as it is rendered anyway")
		r.done()
	}
	for _, o := range sp.strs("syncOptions") {
		c.syncOption(sp.at("syncOptions"), o, &s)
	}
	if m := sp.obj("managedNamespaceMetadata"); m != nil {
		s.nsLabels = m.strMap("labels")
		s.nsAnnotations = m.strMap("annotations")
		m.done()
		if !s.createNamespace {
			c.n.addf("spec.syncPolicy.managedNamespaceMetadata: not converted without CreateNamespace=true: set the labels and annotations on the Namespace in Git")
		}
	}
	sp.done()
	return s
}

// syncOption maps one Application-level sync option
// (docs/design/argocd.md says what each means on an object).
func (c *converter) syncOption(at, opt string, s *sync) {
	key, value, _ := strings.Cut(strings.TrimSpace(opt), "=")
	switch key {
	case "CreateNamespace":
		s.createNamespace = value == "true"
	case "PruneLast", "ApplyOutOfSyncOnly":
		if value == "true" {
			c.n.addf("%s: %s: what Plumb always does", at, opt)
		}
	case "ServerSideApply":
		if value == "false" {
			c.n.addf("%s: %s: not followed, Plumb applies server-side only", at, opt)
		}
	case "Validate":
		c.n.addf("%s: %s: not followed, the API server validates every server-side apply", at, opt)
	case "Prune", "Delete", "Replace", "Force", "SkipDryRunOnMissingResource":
		c.n.addf("%s: %s: Plumb reads this option on objects only: put it in the argocd.argoproj.io/sync-options annotation of the objects in Git (or spec.force for Force=true)", at, opt)
	case "RespectIgnoreDifferences":
		c.n.addf("%s: %s: not converted: spec.ignore keeps fields out of drift detection and correction only", at, opt)
	default:
		c.n.addf("%s: %s: not converted", at, opt)
	}
}

func (c *converter) duration(at, s string) *metav1.Duration {
	var d metav1.Duration
	if err := d.UnmarshalJSON([]byte(fmt.Sprintf("%q", s))); err != nil {
		c.n.errf("%s: %q is not a duration", at, s)
		return nil
	}
	return &d
}

// ignoreDifferences maps spec.ignoreDifferences to spec.ignore.
func (c *converter) ignoreDifferences(items []*fields) []kustomizev1.IgnoreRule {
	var out []kustomizev1.IgnoreRule
	for _, it := range items {
		r := kustomizev1.IgnoreRule{
			Paths:                 it.strs("jsonPointers"),
			JQPathExpressions:     it.strs("jqPathExpressions"),
			ManagedFieldsManagers: it.strs("managedFieldsManagers"),
		}
		sel := kustomizev1.Selector{Group: it.str("group"), Kind: it.str("kind"), Namespace: it.str("namespace")}
		if n := it.str("name"); n != "" {
			// Plumb's selector takes a regular expression; Argo CD a name.
			sel.Name = regexp.QuoteMeta(n)
		}
		if sel != (kustomizev1.Selector{}) {
			r.Target = &sel
		}
		it.done()
		if len(r.Paths)+len(r.JQPathExpressions)+len(r.ManagedFieldsManagers) == 0 {
			c.n.addf("%s: names no field: left out", it.path)
			continue
		}
		out = append(out, r)
	}
	return out
}

// appSource converts one source of an Application: its source object
// and its Kustomization or HelmRelease.
func (c *converter) appSource(a app, name string, src *fields, refs map[string]*fields, rs renderSettings) []runtime.Object {
	var objs []runtime.Object
	repoURL := src.str("repoURL")
	revision := src.str("targetRevision")
	chart := src.str("chart")
	srcPath := src.str("path")
	src.ignore("ref", "name")
	if repoURL == "" {
		c.n.errf("%s: missing", src.at("repoURL"))
		return nil
	}
	helm := src.obj("helm")
	kust := src.obj("kustomize")
	dir := src.obj("directory")
	if src.has("plugin") {
		c.n.errf("%s: config management plugins are not supported by Plumb (render the manifests into Git, or use Kustomize or Helm)", src.at("plugin"))
		return nil
	}

	var sourceKind, sourceName string
	switch {
	case chart != "":
		sourceKind, sourceName = sourcev1.HelmRepositoryKind, name
		objs = append(objs, c.helmRepository(a, name, repoURL))
	case strings.HasPrefix(repoURL, "oci://"):
		sourceKind, sourceName = sourcev1.OCIRepositoryKind, name
		objs = append(objs, c.ociRepository(a, name, repoURL, revision, src.at("targetRevision")))
	default:
		sourceKind = sourcev1.GitRepositoryKind
		key := repoURL + "@" + revision
		if existing, ok := c.repos[key]; ok {
			sourceName = existing
		} else {
			sourceName = name
			objs = append(objs, c.gitRepository(a, name, repoURL, revision, src.at("targetRevision")))
		}
	}

	if chart != "" || helm != nil {
		objs = append(objs, c.helmRelease(a, name, sourceKind, sourceName, chart, srcPath, revision, helm, refs, rs))
		if kust != nil || dir != nil {
			c.n.errf("%s: helm with kustomize or directory: Argo CD would refuse it", src.path)
		}
		src.done()
		return objs
	}

	ks := &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: c.objectMeta(a, name),
		Spec: kustomizev1.KustomizationSpec{
			SourceRef:          kustomizev1.CrossNamespaceSourceReference{Kind: sourceKind, Name: sourceName},
			Path:               kustomizePath(srcPath),
			Interval:           metav1.Duration{Duration: c.opts.Interval},
			Prune:              rs.sync.prune,
			AllowEmpty:         rs.sync.allowEmpty,
			DeletionPolicy:     a.deletionPolicy,
			SyncPolicy:         rs.sync.policy(),
			ServiceAccountName: rs.serviceAccount,
			KubeConfig:         rs.kubeConfig,
			TargetNamespace:    rs.targetNamespace,
			Retry:              rs.sync.retry,
			Ignore:             rs.ignore,
		},
	}
	if !rs.sync.selfHeal {
		ks.Spec.DriftPolicy = kustomizev1.DriftPolicyReport
	} else {
		ks.Spec.DriftPolicy = kustomizev1.DriftPolicyCorrect
	}
	if kust != nil {
		c.kustomizeOptions(kust, &ks.Spec)
	}
	if dir != nil {
		c.directoryOptions(dir, &ks.Spec)
	}
	objs = append(objs, ks)
	src.done()
	return objs
}

// objectMeta is the metadata of an object made for Application a.
func (c *converter) objectMeta(a app, name string) metav1.ObjectMeta {
	om := metav1.ObjectMeta{Name: name, Labels: a.labels, Annotations: a.annotations}
	if !c.template {
		om.Namespace = a.namespace
	}
	return om
}

func kustomizePath(p string) string {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	if p == "" {
		return "./"
	}
	if strings.Contains(p, "{{") {
		return p
	}
	return "./" + p
}

// isTemplated reports whether s holds a Go template action.
func isTemplated(s string) bool { return strings.Contains(s, "{{") }

var (
	commitHash = regexp.MustCompile(`^[0-9a-f]{40}$`)
	// versionLike is a revision that reads as a release tag (v1.2, 2.0.1).
	versionLike = regexp.MustCompile(`^v?[0-9]+(\.[0-9]+)+([-+].*)?$`)
	semverRange = regexp.MustCompile(`[*^~<>=|x]|\s-\s`)
)

// gitRef decides what an Argo CD targetRevision is. Argo CD resolves the
// string against the repository; the converter sees only the string:
// HEAD is the default branch (named by Options.DefaultBranch), 40 hex
// digits a commit, refs/heads/ and refs/tags/ what they say, a version
// (v1.2.3) a tag, a range (1.2.*, ^1.2) semver over the tags, anything
// else a branch.
func (c *converter) gitRef(at, rev string) *sourcev1.GitRepositoryRef {
	switch {
	case rev == "" || rev == "HEAD":
		c.n.addf("%s: %q is the repository's default branch, which Plumb needs by name: %s assumed (--default-branch)", at, rev, c.opts.DefaultBranch)
		return &sourcev1.GitRepositoryRef{Branch: c.opts.DefaultBranch}
	case isTemplated(rev):
		if strings.Contains(rev, "sha") {
			return &sourcev1.GitRepositoryRef{Commit: rev}
		}
		c.n.addf("%s: %q is taken for a branch", at, rev)
		return &sourcev1.GitRepositoryRef{Branch: rev}
	case commitHash.MatchString(rev):
		return &sourcev1.GitRepositoryRef{Commit: rev}
	case strings.HasPrefix(rev, "refs/heads/"):
		return &sourcev1.GitRepositoryRef{Branch: strings.TrimPrefix(rev, "refs/heads/")}
	case strings.HasPrefix(rev, "refs/tags/"):
		return &sourcev1.GitRepositoryRef{Tag: strings.TrimPrefix(rev, "refs/tags/")}
	case strings.HasPrefix(rev, "refs/"):
		return &sourcev1.GitRepositoryRef{Name: rev}
	case versionLike.MatchString(rev):
		c.n.addf("%s: %q is taken for a tag; if it is a branch, write ref.branch", at, rev)
		return &sourcev1.GitRepositoryRef{Tag: rev}
	case semverRange.MatchString(rev) && strings.ContainsAny(rev, "0123456789"):
		return &sourcev1.GitRepositoryRef{SemVer: rev}
	default:
		return &sourcev1.GitRepositoryRef{Branch: rev}
	}
}

func (c *converter) gitRepository(a app, name, url, rev, at string) *sourcev1.GitRepository {
	gr := &sourcev1.GitRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.GitRepositoryKind},
		ObjectMeta: c.objectMeta(app{namespace: a.namespace}, name),
		Spec: sourcev1.GitRepositorySpec{
			URL:       url,
			Interval:  metav1.Duration{Duration: c.opts.Interval},
			Reference: c.gitRef(at, rev),
		},
	}
	c.credentialsNote(url)
	return gr
}

func (c *converter) credentialsNote(url string) {
	c.n.addf("%s: Argo CD's repository credentials are not converted: a private repository needs a Secret named in spec.secretRef", url)
}

// helmRepository is the source of a chart Argo CD reads from a chart
// repository: HTTP(S), or an OCI registry (Argo CD writes those without
// a scheme).
func (c *converter) helmRepository(a app, name, url string) *sourcev1.HelmRepository {
	hr := &sourcev1.HelmRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.HelmRepositoryKind},
		ObjectMeta: c.objectMeta(app{namespace: a.namespace}, name),
		Spec: sourcev1.HelmRepositorySpec{
			URL:      url,
			Interval: metav1.Duration{Duration: c.opts.Interval},
		},
	}
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		hr.Spec.Type = "oci"
		hr.Spec.URL = "oci://" + strings.TrimPrefix(url, "oci://")
	}
	c.credentialsNote(url)
	return hr
}

// ociRepository is the source of plain manifests Argo CD reads from an
// OCI artifact.
func (c *converter) ociRepository(a app, name, url, rev, at string) *sourcev1.OCIRepository {
	or := &sourcev1.OCIRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.OCIRepositoryKind},
		ObjectMeta: c.objectMeta(app{namespace: a.namespace}, name),
		Spec: sourcev1.OCIRepositorySpec{
			URL:      url,
			Interval: metav1.Duration{Duration: c.opts.Interval},
		},
	}
	switch {
	case strings.HasPrefix(rev, "sha256:"):
		or.Spec.Reference = &sourcev1.OCIRepositoryRef{Digest: rev}
	case rev == "" || rev == "HEAD":
		c.n.addf("%s: %q: the tag latest is followed", at, rev)
		or.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: "latest"}
	case semverRange.MatchString(rev) && !isTemplated(rev):
		or.Spec.Reference = &sourcev1.OCIRepositoryRef{SemVer: rev}
	default:
		or.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: rev}
	}
	c.credentialsNote(url)
	return or
}

// kustomizeOptions maps spec.source.kustomize onto the Kustomization.
func (c *converter) kustomizeOptions(k *fields, spec *kustomizev1.KustomizationSpec) {
	spec.NamePrefix = k.str("namePrefix")
	spec.NameSuffix = k.str("nameSuffix")
	for _, f := range []string{"namePrefix", "nameSuffix"} {
		if k.has(f) {
			c.n.addf("%s: Argo CD writes it into the kustomization file, replacing the %s that file may have; Plumb adds it to the file's own", k.at(f), f)
		}
	}
	if ns := k.str("namespace"); ns != "" {
		spec.TargetNamespace = ns
	}
	for _, img := range k.strs("images") {
		spec.Images = append(spec.Images, kustomizeImage(img))
	}
	labels, annotations := k.strMap("commonLabels"), k.strMap("commonAnnotations")
	if len(labels)+len(annotations) > 0 {
		spec.CommonMetadata = &kustomizev1.CommonMetadata{Labels: labels, Annotations: annotations}
		if len(labels) > 0 && !k.boolean("labelWithoutSelector") {
			c.n.addf("%s: set on every object's metadata (spec.commonMetadata); Argo CD's kustomize also writes them into selectors and pod templates: add them there in Git if a selector needs them", k.at("commonLabels"))
		}
		if len(annotations) > 0 {
			c.n.addf("%s: set on every object's metadata (spec.commonMetadata), not on pod templates as kustomize's commonAnnotations", k.at("commonAnnotations"))
		}
	}
	k.ignore("labelWithoutSelector")
	k.skip("labelIncludeTemplates", "commonMetadata never touches pod templates")
	k.skip("forceCommonLabels", "commonMetadata always overrides")
	k.skip("forceCommonAnnotations", "commonMetadata always overrides")
	k.skip("commonAnnotationsEnvsubst", "use spec.postBuild.substitute for variables")
	for _, r := range k.objs("replicas") {
		name := r.str("name")
		count, _ := r.integer("count")
		r.done()
		spec.Patches = append(spec.Patches, kustomizev1.Patch{
			Patch:  fmt.Sprintf(`[{"op": "add", "path": "/spec/replicas", "value": %d}]`, count),
			Target: &kustomizev1.Selector{Kind: "Deployment|StatefulSet|ReplicaSet|ReplicationController", Name: "^" + regexp.QuoteMeta(name) + "$"},
		})
	}
	for _, p := range k.objs("patches") {
		if p.has("path") {
			c.n.addf("%s: a patch from the file %s is not converted: Plumb's patches are inline; copy the file's content into spec.patches", p.path, p.str("path"))
			p.ignore("target", "patch", "options")
			p.done()
			continue
		}
		patch := kustomizev1.Patch{Patch: p.str("patch")}
		if t := p.obj("target"); t != nil {
			patch.Target = &kustomizev1.Selector{
				Group: t.str("group"), Version: t.str("version"), Kind: t.str("kind"),
				Name: t.str("name"), Namespace: t.str("namespace"),
				LabelSelector: t.str("labelSelector"), AnnotationSelector: t.str("annotationSelector"),
			}
			t.done()
		}
		p.skip("options", "Plumb's patches take no options")
		p.done()
		spec.Patches = append(spec.Patches, patch)
	}
	spec.Components = k.strs("components")
	spec.IgnoreMissingComponents = k.boolean("ignoreMissingComponents")
	k.skip("version", "Plumb builds with the kustomize it is built with")
	k.skip("kubeVersion", "Plumb's kustomize renders no Helm charts")
	k.skip("apiVersions", "Plumb's kustomize renders no Helm charts")
	k.done()
}

// kustomizeImage parses Argo CD's image override, kustomize's
// `edit set image` syntax: [old=]new[:tag][@digest].
func kustomizeImage(s string) kustomizev1.Image {
	name, repl, found := strings.Cut(s, "=")
	if !found {
		repl = s
	}
	img := kustomizev1.Image{}
	if d := strings.Index(repl, "@"); d >= 0 {
		img.Digest = repl[d+1:]
		repl = repl[:d]
	}
	// A tag follows the last colon after the last slash (a registry's
	// port is before it).
	if colon := strings.LastIndex(repl, ":"); colon > strings.LastIndex(repl, "/") {
		img.NewTag = repl[colon+1:]
		repl = repl[:colon]
	}
	if found {
		img.Name = name
		if repl != name {
			img.NewName = repl
		}
	} else {
		img.Name = repl
	}
	return img
}

// directoryOptions converts directory.jsonnet, whose fields Plumb's
// spec.jsonnet takes as they are, and notes what Plumb's folder build
// does differently.
func (c *converter) directoryOptions(d *fields, spec *kustomizev1.KustomizationSpec) {
	if !d.boolean("recurse") {
		c.n.addf("%s: Plumb reads the YAML of sub-folders too (Argo CD's recurse: true); move what must not be applied out of the path", d.at("recurse"))
	}
	d.skip("include", "Plumb applies every YAML file of the path; use the GitRepository's spec.ignore to leave files out")
	d.skip("exclude", "Plumb applies every YAML file of the path; use the GitRepository's spec.ignore to leave files out")
	if j := d.obj("jsonnet"); j != nil {
		js := &kustomizev1.Jsonnet{ExtVars: jsonnetVars(j.objs("extVars")), TLAs: jsonnetVars(j.objs("tlas")), Libs: j.strs("libs")}
		// Empty, Argo CD's directory.jsonnet changes nothing, while a set
		// spec.jsonnet insists that the path holds .jsonnet files.
		if len(js.ExtVars)+len(js.TLAs)+len(js.Libs) > 0 {
			spec.Jsonnet = js
		}
		j.done()
	}
	d.done()
}

// jsonnetVars converts directory.jsonnet's extVars or tlas.
func jsonnetVars(items []*fields) []kustomizev1.JsonnetVar {
	var vars []kustomizev1.JsonnetVar
	for _, f := range items {
		vars = append(vars, kustomizev1.JsonnetVar{Name: f.str("name"), Value: f.str("value"), Code: f.boolean("code")})
		f.done()
	}
	return vars
}

// helmRelease converts a Helm source.
func (c *converter) helmRelease(a app, name, sourceKind, sourceName, chart, chartPath, revision string, h *fields, refs map[string]*fields, rs renderSettings) *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{
		TypeMeta:   metav1.TypeMeta{APIVersion: helmv2.GroupVersion.String(), Kind: helmv2.HelmReleaseKind},
		ObjectMeta: c.objectMeta(a, name),
		Spec: helmv2.HelmReleaseSpec{
			Interval:           metav1.Duration{Duration: c.opts.Interval},
			SyncPolicy:         rs.sync.policy(),
			ServiceAccountName: rs.serviceAccount,
			KubeConfig:         rs.kubeConfig,
			TargetNamespace:    rs.targetNamespace,
			// Argo CD names the release after the Application; Plumb
			// would prefix the target namespace.
			ReleaseName: a.name,
		},
	}
	tpl := helmv2.HelmChartTemplateSpec{SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourceKind, Name: sourceName}}
	if chart != "" {
		tpl.Chart = chart
		tpl.Version = revision
		if tpl.Version == "" {
			tpl.Version = "*"
		}
	} else {
		tpl.Chart = kustomizePath(chartPath)
		// Argo CD renders the chart of every commit: so does Plumb with
		// the Revision strategy.
		tpl.ReconcileStrategy = "Revision"
	}
	hr.Spec.Chart = &helmv2.HelmChartTemplate{Spec: tpl}
	mode := "enabled"
	if !rs.sync.selfHeal {
		mode = "warn"
	}
	hr.Spec.DriftDetection = &helmv2.DriftDetection{Mode: mode, Ignore: rs.ignore}
	if !rs.sync.prune {
		c.n.addf("spec.syncPolicy.automated.prune: false: a HelmRelease always deletes what leaves the chart, as Helm does")
	}
	if rs.sync.retry != nil {
		c.n.addf("spec.syncPolicy.retry: not converted for a HelmRelease: see spec.install.remediation and spec.upgrade.remediation")
	}
	if a.deletionPolicy == "Orphan" {
		c.n.addf("Argo CD would leave the objects when the Application is deleted (no %s, or preserveResourcesOnDeletion); deleting the HelmRelease uninstalls the release", cascadeFinalizer)
	}
	if h == nil {
		return hr
	}
	if rn := h.str("releaseName"); rn != "" {
		hr.Spec.ReleaseName = rn
	}
	for _, f := range h.strs("valueFiles") {
		if strings.HasPrefix(f, "$") {
			c.n.addf("%s: %s is read from another source: not converted (Plumb reads values files only from the chart's source)", h.at("valueFiles"), f)
			continue
		}
		tpl.ValuesFiles = append(tpl.ValuesFiles, f)
	}
	tpl.IgnoreMissingValuesFiles = h.boolean("ignoreMissingValueFiles")
	// Argo CD reads values.yaml first and its valueFiles over it, as
	// Plumb merges valuesFiles over values.yaml.
	hr.Spec.Chart.Spec = tpl
	values := map[string]any{}
	if v := h.str("values"); v != "" {
		m, err := parseYAMLValue(v)
		if err != nil {
			c.n.errf("%s: %v", h.at("values"), err)
		} else {
			values = m
		}
	}
	if vo := h.obj("valuesObject"); vo != nil {
		mergeValues(values, vo.m)
		vo.ignore(sortedKeys(vo.m)...)
	}
	for _, p := range h.objs("parameters") {
		c.helmParameter(p, values)
	}
	h.skip("fileParameters", "put the files' content in values")
	if len(values) > 0 {
		raw, err := json.Marshal(values)
		if err != nil {
			c.n.errf("%s: %v", h.at("values"), err)
		} else {
			hr.Spec.Values = &apiextensionsv1.JSON{Raw: raw}
		}
	}
	if h.boolean("skipCrds") {
		hr.Spec.Install = &helmv2.Install{CRDs: "Skip"}
		hr.Spec.Upgrade = &helmv2.Upgrade{CRDs: "Skip"}
	}
	if v := h.str("version"); v != "" && v != "v3" {
		c.n.addf("%s: %s: Plumb renders with Helm 3's chart API", h.at("version"), v)
	}
	if ns := h.str("namespace"); ns != "" {
		hr.Spec.TargetNamespace = ns
	}
	h.skip("skipSchemaValidation", "Plumb validates values against the chart's schema")
	h.skip("skipTests", "Plumb runs tests only with spec.test.enable")
	h.skip("passCredentials", "set spec.passCredentials on the HelmRepository")
	h.skip("kubeVersion", "Plumb renders against the cluster's real capabilities")
	h.skip("apiVersions", "Plumb renders against the cluster's real capabilities")
	h.done()
	return hr
}

// helmParameter sets one of Argo CD's Helm parameters (helm --set, or
// --set-string with forceString) in values.
func (c *converter) helmParameter(p *fields, values map[string]any) {
	name, value := p.str("name"), p.str("value")
	force := p.boolean("forceString")
	p.done()
	if name == "" {
		c.n.errf("%s: missing", p.at("name"))
		return
	}
	if isTemplated(value) {
		// --set would parse the template's braces: set a placeholder as a
		// string and put the template text in its place.
		if err := setValue(name, templatePlaceholder, true, values); err != nil {
			c.n.errf("%s: %v", p.path, err)
			return
		}
		replacePlaceholder(values, value)
		if !force {
			c.n.addf("%s: the value is a template, written as a string; helm --set would have typed %q by its rendered text", p.path, name)
		}
		return
	}
	if err := setValue(name, value, force, values); err != nil {
		c.n.errf("%s: %v", p.path, err)
	}
}

// mergeValues merges src into dst, maps recursively, src winning.
func mergeValues(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeValues(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
