package inspect

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	setv1 "plumb.dev/api/set/v1"
	"plumb.dev/pkg/kinds"
)

// maxSetObjects bounds the objects listed per kind for one set's page: a
// set gives at most 2,000 objects in all.
const maxSetObjects = 2000

// setView is an ObjectSet's page: its generators summed up, and the
// elements of its last applied render, each with the objects it gave and
// their Ready state as the user may read them.
type setView struct {
	// Generators are one line per generator (generatorSummary).
	Generators []string `json:"generators"`
	// Elements is how many elements the last evaluation gave; Items
	// holds the first of them (status.elementDetails).
	Elements int          `json:"elements"`
	Items    []setElement `json:"items"`
	// Note says what the page lacks and why: elements beyond those the
	// status holds, a kind the user may not list.
	Note string `json:"note,omitempty"`
}

// setElement is one element: its values (compact JSON) and its objects.
type setElement struct {
	Values  string      `json:"values"`
	Objects []setObject `json:"objects"`
}

// setObject is one object a set's element gave. Route is the UI's route
// kind when the object has a page (Plumb's kinds), empty for a
// ConfigMap. Ready is its Ready condition's status (a ConfigMap's
// "Exists"), "Missing" when the set's labelled objects lack it, empty when
// the user may not list its kind (Error says why).
type setObject struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Route     string `json:"route,omitempty"`
	Ready     string `json:"ready,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Message   string `json:"message,omitempty"`
	Error     string `json:"error,omitempty"`
}

// setPage fills an ObjectSet's page. The objects' states come from one
// list per kind in the set's namespace, selected by the labels
// sync-controller puts on every object of the set, with the user's
// identity: a set of 2,000 objects costs a handful of requests, and a
// kind the user may not list is said so, not guessed.
func setPage(ctx context.Context, c client.Client, obj client.Object, page *objectPage) {
	set, ok := obj.(*setv1.ObjectSet)
	if !ok {
		return
	}
	v := &setView{Generators: []string{}, Items: []setElement{}, Elements: set.Status.Elements}
	for _, g := range set.Spec.Generators {
		v.Generators = append(v.Generators, generatorSummary(g))
	}
	var notes []string
	if n := len(set.Status.ElementDetails); set.Status.Elements > n {
		notes = append(notes, fmt.Sprintf("the status holds the first %d of %d elements", n, set.Status.Elements))
	}
	// The kinds the elements gave, each listed once.
	states := map[string]map[string]setObject{} // kind → name → state
	errs := map[string]string{}
	for _, el := range set.Status.ElementDetails {
		for _, id := range el.Objects {
			kind, _, _ := splitID(id)
			if _, done := states[kind]; done || errs[kind] != "" {
				continue
			}
			got, err := listSetObjects(ctx, c, set, kind)
			if err != nil {
				errs[kind] = err.Error()
				notes = append(notes, kind+"s not read: "+err.Error())
				continue
			}
			states[kind] = got
		}
	}
	for _, el := range set.Status.ElementDetails {
		e := setElement{Values: el.Values, Objects: []setObject{}}
		for _, id := range el.Objects {
			kind, ns, name := splitID(id)
			o := setObject{ID: id, Kind: kind, Namespace: ns, Name: name}
			if k, ok := kinds.Lookup(kind); ok {
				o.Route = k.Route()
			}
			switch st, listed := states[kind][name]; {
			case errs[kind] != "":
				o.Error = errs[kind]
			case listed:
				o.Ready, o.Reason, o.Message = st.Ready, st.Reason, st.Message
			default:
				o.Ready = "Missing"
			}
			e.Objects = append(e.Objects, o)
		}
		v.Items = append(v.Items, e)
	}
	v.Note = strings.Join(notes, "; ")
	page.Set = v
}

// listSetObjects lists the set's objects of kind (a Plumb kind or a
// ConfigMap) in its namespace, by its labels: name → Ready state.
func listSetObjects(ctx context.Context, c client.Client, set *setv1.ObjectSet, kind string) (map[string]setObject, error) {
	opts := []client.ListOption{client.InNamespace(set.Namespace), client.Limit(maxSetObjects),
		client.MatchingLabels{setv1.NameLabel: set.Name, setv1.NamespaceLabel: set.Namespace}}
	out := map[string]setObject{}
	if k, ok := kinds.Lookup(kind); ok {
		l := k.NewList()
		if err := c.List(ctx, l, opts...); err != nil {
			return nil, err
		}
		items, err := metaItems(l)
		if err != nil {
			return nil, err
		}
		for _, o := range items {
			s := setObject{Ready: string(metav1.ConditionUnknown)}
			if cd, ok := o.(conditioned); ok {
				s.Ready, s.Reason, s.Message = readyOf(cd.GetConditions())
			}
			out[o.GetName()] = s
		}
		return out, nil
	}
	if kind != "ConfigMap" {
		return nil, fmt.Errorf("an ObjectSet gives no %s", kind)
	}
	// A ConfigMap's metadata only: its data is none of this page's business.
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := c.List(ctx, l, opts...); err != nil {
		return nil, err
	}
	for _, o := range l.Items {
		out[o.Name] = setObject{Ready: "Exists"}
	}
	return out, nil
}

// metaItems returns the items of a typed list as client.Objects.
func metaItems(l client.ObjectList) ([]client.Object, error) {
	objs, err := apimeta.ExtractList(l)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		if co, ok := o.(client.Object); ok {
			out = append(out, co)
		}
	}
	return out, nil
}

// splitID splits pkg/object's ID text, Kind/namespace/name (Kind/name for
// a cluster-scoped object, which a set does not give).
func splitID(id string) (kind, namespace, name string) {
	parts := strings.SplitN(id, "/", 3)
	switch len(parts) {
	case 3:
		return parts[0], parts[1], parts[2]
	case 2:
		return parts[0], "", parts[1]
	}
	return id, "", ""
}

// generatorSummary is one line about a generator: its type and what it
// reads.
func generatorSummary(g setv1.Generator) string {
	switch {
	case g.Matrix != nil:
		return "matrix of " + childSummaries(g.Matrix.Generators, " × ")
	case g.Merge != nil:
		return fmt.Sprintf("merge on %s of %s", strings.Join(g.Merge.MergeKeys, ", "), childSummaries(g.Merge.Generators, " and "))
	}
	return childSummary(setv1.ChildGenerator{List: g.List, Git: g.Git, Clusters: g.Clusters})
}

func childSummaries(gens []setv1.ChildGenerator, sep string) string {
	parts := make([]string, 0, len(gens))
	for _, g := range gens {
		parts = append(parts, "("+childSummary(g)+")")
	}
	return strings.Join(parts, sep)
}

func childSummary(g setv1.ChildGenerator) string {
	switch {
	case g.List != nil:
		return fmt.Sprintf("list of %d elements", len(g.List.Elements))
	case g.Git != nil:
		ref := g.Git.SourceRef
		s := "git: " + ref.Kind + " " + ref.Name
		if ref.Namespace != "" {
			s = "git: " + ref.Kind + " " + ref.Namespace + "/" + ref.Name
		}
		if d := gitPaths(g.Git.Directories); d != "" {
			s += ", directories " + d
		}
		if f := gitPaths(g.Git.Files); f != "" {
			s += ", files " + f
		}
		return s
	case g.Clusters != nil:
		sel := "every kubeconfig Secret"
		if g.Clusters.Selector != nil {
			if s, err := metav1.LabelSelectorAsSelector(g.Clusters.Selector); err == nil {
				sel = "kubeconfig Secrets labelled " + s.String()
			}
		}
		return "clusters: " + sel
	}
	return "no generator"
}

// gitPaths lists a git generator's paths, excluded ones marked.
func gitPaths(paths []setv1.GitPath) string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if p.Exclude {
			out = append(out, "not "+p.Path)
		} else {
			out = append(out, p.Path)
		}
	}
	return strings.Join(out, ", ")
}
