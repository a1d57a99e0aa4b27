package argoconvert

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	sigsyaml "sigs.k8s.io/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// ObjectSet's group, version and kind (set.plumb.dev/v1): written as
// unstructured objects, as the converter needs none of its Go types.
const (
	ObjectSetAPIVersion = "set.plumb.dev/v1"
	ObjectSetKind       = "ObjectSet"
	// maxGenerators is ObjectSet's bound on spec.generators.
	maxGenerators = 10
)

func (c *converter) applicationSet(top, md *fields) []runtime.Object {
	var setName, setNamespace string
	if md == nil {
		c.n.errf("metadata: missing")
		return nil
	}
	setName, setNamespace = md.str("name"), md.str("namespace")
	if setNamespace == "" {
		setNamespace = defaultNamespace
	}
	if c.opts.Namespace != "" {
		setNamespace = c.opts.Namespace
	}
	labels, annotations := md.strMap("labels"), md.strMap("annotations")
	md.ignore("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "finalizers")
	md.done()
	spec := top.obj("spec")
	if spec == nil {
		c.n.errf("spec: missing")
		return nil
	}
	goTemplate := spec.boolean("goTemplate")
	if opts := spec.strs("goTemplateOptions"); len(opts) > 0 {
		c.n.addf("spec.goTemplateOptions: %s: not converted; ObjectSet's templates have their own rules for a missing key", strings.Join(opts, ", "))
	}
	c.repos = map[string]string{}
	var objs []runtime.Object
	var generators []any
	for i, g := range spec.objs("generators") {
		gen, extra := c.generator(g, setName, setNamespace, goTemplate, fmt.Sprint(i+1), false)
		objs = append(objs, extra...)
		if gen != nil {
			generators = append(generators, gen)
		}
	}
	if len(generators) == 0 {
		c.n.errf("spec.generators: none that Plumb's ObjectSet has")
	}
	if len(generators) > maxGenerators {
		c.n.errf("spec.generators: %d, ObjectSet takes at most %d", len(generators), maxGenerators)
	}

	preserve := false
	if sp := spec.obj("syncPolicy"); sp != nil {
		preserve = sp.boolean("preserveResourcesOnDeletion")
		sp.skip("applicationsSync", "an ObjectSet creates, updates and prunes its objects")
		sp.done()
	}
	spec.skip("strategy", "an ObjectSet has no progressive sync: every element's objects are written at once")
	spec.skip("templatePatch", "apply the patch to the template by hand")
	spec.skip("ignoreApplicationDifferences", "an ObjectSet owns its objects whole")
	spec.skip("preservedFields", "an ObjectSet owns its objects whole")
	spec.skip("applyNestedSelectors", "generator selectors are not converted")

	var template string
	if t := spec.obj("template"); t != nil {
		tf := newFields(t.path, c.translate(t.m, goTemplate).(map[string]any), c.n)
		t.ignore(sortedKeys(t.m)...)
		template = c.appTemplate(tf, setNamespace, preserve)
	} else {
		c.n.errf("spec.template: missing")
	}
	spec.done()

	set := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ObjectSetAPIVersion,
		"kind":       ObjectSetKind,
		"metadata":   map[string]any{"name": setName, "namespace": setNamespace},
		"spec": map[string]any{
			"interval":   metav1.Duration{Duration: c.opts.Interval}.Duration.String(),
			"generators": generators,
			"template":   template,
		},
	}}
	if len(labels) > 0 {
		set.SetLabels(labels)
	}
	if len(annotations) > 0 {
		set.SetAnnotations(annotations)
	}
	return append(objs, set)
}

// appTemplate converts the Application template, already in Go
// template syntax, into the ObjectSet's template: YAML documents.
func (c *converter) appTemplate(t *fields, setNamespace string, preserve bool) string {
	c.template = true
	defer func() { c.template = false }()
	md := t.obj("metadata")
	a := c.appMeta(md)
	a.namespace = setNamespace
	// The ApplicationSet controller puts the cascade finalizer on each
	// Application unless told to preserve the objects.
	a.deletionPolicy = kustomizev1.DeletionPolicy("Delete")
	if preserve {
		a.deletionPolicy = kustomizev1.DeletionPolicy("Orphan")
	}
	spec := t.obj("spec")
	if spec == nil {
		c.n.errf("spec.template.spec: missing")
		return ""
	}
	var b strings.Builder
	for _, o := range c.applicationSpec(a, spec) {
		u, err := toUnstructured(o)
		if err != nil {
			c.n.errf("spec.template: %v", err)
			continue
		}
		data, err := sigsyaml.Marshal(u.Object)
		if err != nil {
			c.n.errf("spec.template: %v", err)
			continue
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	t.done()
	return b.String()
}

// generator converts one generator into ObjectSet's, with the objects it
// needs (a git generator's GitRepository). nil, with a note, when
// ObjectSet has no such generator.
func (c *converter) generator(g *fields, setName, setNamespace string, goTemplate bool, id string, nested bool) (map[string]any, []runtime.Object) {
	g.skip("selector", "ObjectSet's generators have no post-selector: filter the elements at their source")
	g.skip("template", "a generator's own template is not converted: merge it into spec.template")
	var out map[string]any
	var objs []runtime.Object
	switch {
	case g.has("list"):
		out = map[string]any{"list": c.listGenerator(g.obj("list"), goTemplate)}
	case g.has("git"):
		gen, repo := c.gitGenerator(g.obj("git"), setName, setNamespace, id)
		if gen != nil {
			out = map[string]any{"git": gen}
			objs = append(objs, repo)
		}
	case g.has("clusters"):
		out = map[string]any{"clusters": c.clustersGenerator(g.obj("clusters"))}
	case g.has("pullRequest"):
		if gen := c.pullRequestGenerator(g.obj("pullRequest")); gen != nil {
			out = map[string]any{"pullRequests": gen}
		}
	case g.has("matrix"), g.has("merge"):
		kind := "matrix"
		if g.has("merge") {
			kind = "merge"
		}
		m := g.obj(kind)
		if m == nil {
			return nil, nil
		}
		if nested {
			c.n.addf("%s: a %s inside a matrix or merge: ObjectSet combines two plain generators only; not converted, and the generator around it is left out", m.path, kind)
			m.ignore(sortedKeys(m.m)...)
			return nil, nil
		}
		combined := map[string]any{}
		var children []any
		ok := true
		for i, child := range m.objs("generators") {
			cg, cobjs := c.generator(child, setName, setNamespace, goTemplate, fmt.Sprintf("%s-%d", id, i+1), true)
			if cg == nil {
				ok = false
			}
			children = append(children, cg)
			objs = append(objs, cobjs...)
		}
		if len(children) != 2 {
			c.n.addf("%s.generators: %d generators; ObjectSet's %s takes exactly two: left out", m.path, len(children), kind)
			ok = false
		}
		if kind == "merge" {
			keys := m.strs("mergeKeys")
			combined["mergeKeys"] = toAny(keys)
		}
		m.skip("template", "a generator's own template is not converted: merge it into spec.template")
		m.done()
		if !ok {
			c.n.addf("%s: left out, as one of its generators is", m.path)
			return nil, nil
		}
		combined["generators"] = children
		out = map[string]any{kind: combined}
	default:
		for _, k := range []string{"scmProvider", "clusterDecisionResource", "plugin"} {
			if g.has(k) {
				c.n.addf("%s: Plumb's ObjectSet has no %s generator: left out, its elements are missing", g.at(k), k)
				g.ignore(k)
			}
		}
	}
	g.done()
	return out, objs
}

func (c *converter) listGenerator(l *fields, goTemplate bool) map[string]any {
	elements := l.list("elements")
	if y := l.str("elementsYaml"); y != "" {
		parsed, err := parseYAMLAny(y)
		if err != nil {
			c.n.errf("%s: %v", l.at("elementsYaml"), err)
		} else if list, ok := parsed.([]any); ok {
			elements = append(elements, list...)
		} else {
			c.n.errf("%s: not a YAML list", l.at("elementsYaml"))
		}
	}
	l.skip("template", "a generator's own template is not converted: merge it into spec.template")
	l.done()
	if elements == nil {
		elements = []any{}
	}
	for i, e := range elements {
		if m, ok := e.(map[string]any); ok {
			if !goTemplate {
				// fasttemplate's keys are flat: values.redis is the
				// redis of .values in a Go template.
				m = nestDottedKeys(m)
				elements[i] = m
			}
			c.listElements = append(c.listElements, m)
		}
	}
	return map[string]any{"elements": elements}
}

func (c *converter) gitGenerator(g *fields, setName, setNamespace, id string) (map[string]any, runtime.Object) {
	url, rev := g.str("repoURL"), g.str("revision")
	c.gitGenerators++
	name := setName
	if c.gitGenerators > 1 {
		name = fmt.Sprintf("%s-%d", setName, c.gitGenerators)
	}
	c.repos[url+"@"+rev] = name
	repo := &sourcev1.GitRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.GitRepositoryKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: setNamespace},
		Spec: sourcev1.GitRepositorySpec{
			URL:       url,
			Interval:  metav1.Duration{Duration: c.opts.Interval},
			Reference: c.gitRef(g.at("revision"), rev),
		},
	}
	c.credentialsNote(url)
	out := map[string]any{"sourceRef": map[string]any{"kind": sourcev1.GitRepositoryKind, "name": name}}
	var dirs, files []any
	for _, d := range g.objs("directories") {
		e := map[string]any{"path": d.str("path")}
		if d.boolean("exclude") {
			e["exclude"] = true
		}
		d.done()
		dirs = append(dirs, e)
	}
	for _, f := range g.objs("files") {
		if f.boolean("exclude") {
			c.n.addf("%s: an excluding files pattern: ObjectSet's files have none, left out", f.path)
			f.ignore("path")
			f.done()
			continue
		}
		files = append(files, map[string]any{"path": f.str("path")})
		f.done()
	}
	if dirs != nil {
		out["directories"] = dirs
	}
	if files != nil {
		out["files"] = files
	}
	if p := g.str("pathParamPrefix"); p != "" {
		c.n.errf("%s: %s: ObjectSet's elements have no prefix; rename .%s.path to .path in the template and remove the prefix", g.at("pathParamPrefix"), p, p)
	}
	g.skip("values", "ObjectSet's git generator has no values: put them in the template")
	g.skip("requeueAfterSeconds", "the GitRepository's interval and its webhooks say when the folders are read again")
	g.done()
	return out, repo
}

func (c *converter) clustersGenerator(g *fields) map[string]any {
	out := map[string]any{}
	if sel := g.obj("selector"); sel != nil {
		out["selector"] = sel.m
		sel.ignore(sortedKeys(sel.m)...)
		sel.done()
	} else {
		out["selector"] = map[string]any{}
	}
	if v := g.strMap("values"); len(v) > 0 {
		vals := map[string]any{}
		for k, s := range v {
			vals[k] = s
		}
		out["values"] = vals
	}
	g.skip("flatList", "ObjectSet gives one element per cluster")
	g.done()
	c.n.addf("%s: Plumb's elements are kubeconfig Secrets in the ObjectSet's namespace (docs/design/remote-clusters.md), selected by their labels: give each Argo CD cluster such a Secret with the labels the selector asks for", g.path)
	return out
}

// pullRequestGenerator converts a pullRequest generator of GitHub,
// GitLab or Gitea; nil, with a note, for another host.
func (c *converter) pullRequestGenerator(p *fields) map[string]any {
	if p == nil {
		return nil
	}
	out := map[string]any{}
	hosts := map[string][]string{
		"github": {"owner", "repo", "api", "labels"},
		"gitlab": {"project", "api", "labels", "pullRequestState"},
		"gitea":  {"owner", "repo", "api", "labels"},
	}
	for _, host := range []string{"github", "gitlab", "gitea"} {
		h := p.obj(host)
		if h == nil {
			continue
		}
		m := map[string]any{}
		for _, k := range hosts[host] {
			if k == "labels" {
				if l := h.strs(k); len(l) > 0 {
					m[k] = toAny(l)
				}
			} else if v := h.str(k); v != "" {
				m[k] = v
			}
		}
		if ref := h.obj("tokenRef"); ref != nil {
			m["tokenRef"] = map[string]any{"secretName": ref.str("secretName"), "key": ref.str("key")}
			ref.done()
			c.n.addf("%s: the Secret %s must be in the ObjectSet's namespace (Argo CD reads it from its own)", h.at("tokenRef"), m["tokenRef"].(map[string]any)["secretName"])
		}
		h.skip("appSecretName", "ObjectSet's github generator authenticates with a token (tokenRef), not a GitHub App")
		h.skip("insecure", "ObjectSet verifies the host's certificate with the system's roots")
		h.skip("caRef", "ObjectSet verifies the host's certificate with the system's roots")
		h.done()
		out[host] = m
	}
	if len(out) == 0 {
		for _, k := range []string{"bitbucketServer", "bitbucket", "azuredevops"} {
			if p.has(k) {
				c.n.addf("%s: ObjectSet's pullRequests generator has no %s host: left out, its elements (one per pull request) are missing", p.at(k), k)
				p.ignore(k)
			}
		}
		p.ignore(sortedKeys(p.m)...)
		p.done()
		return nil
	}
	var filters []any
	for _, f := range p.objs("filters") {
		m := map[string]any{}
		for _, k := range []string{"branchMatch", "targetBranchMatch"} {
			if v := f.str(k); v != "" {
				m[k] = v
			}
		}
		f.done()
		filters = append(filters, m)
	}
	if filters != nil {
		out["filters"] = filters
	}
	if n, ok := p.integer("requeueAfterSeconds"); ok {
		out["requeueAfterSeconds"] = n
	}
	p.done()
	return out
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// nestDottedKeys turns {"values.redis": x} into {"values": {"redis": x}}.
func nestDottedKeys(m map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range sortedKeys(m) {
		parts := strings.Split(k, ".")
		cur := out
		for _, p := range parts[:len(parts)-1] {
			next, ok := cur[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[p] = next
			}
			cur = next
		}
		cur[parts[len(parts)-1]] = m[k]
	}
	return out
}
