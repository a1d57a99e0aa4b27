package install

import (
	"context"
	"fmt"
	"io"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MinKubernetes is the oldest Kubernetes deploy/ installs on: its CRDs'
// validation rules (x-kubernetes-validations with fieldPath) are served
// by every release from 1.30 on. sync-controller's
// MutatingAdmissionPolicy needs 1.36; Render leaves it out of an install
// on an older server (Options.AdmissionPolicy) and sync-controller then
// adds its finalizer itself.
const MinKubernetes = "1.30.0"

// AdmissionPolicyKubernetes is the release from which
// admissionregistration.k8s.io/v1 MutatingAdmissionPolicy is served.
const AdmissionPolicyKubernetes = "1.36.0"

// ServesAdmissionPolicy reports whether the API server serves
// MutatingAdmissionPolicy in admissionregistration.k8s.io/v1, which
// sync-controller's finalizer policy is written in.
func ServesAdmissionPolicy(dc discovery.DiscoveryInterface) (bool, error) {
	res, err := dc.ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1")
	if err != nil {
		return false, err
	}
	for _, r := range res.APIResources {
		if r.Name == "mutatingadmissionpolicies" {
			return true, nil
		}
	}
	return false, nil
}

// Precheck checks, before an install, what the install of objs needs:
// the Kubernetes version and, through SelfSubjectAccessReviews, the
// rights to create and patch (server-side apply) every kind of objs where
// it goes, and to create and read the NATS credentials. It prints ✔ or ✗
// per check and returns how many failed.
func Precheck(ctx context.Context, c client.Client, dc discovery.DiscoveryInterface, objs []*unstructured.Unstructured, out io.Writer) (int, error) {
	failed := 0
	ok := func(format string, args ...any) { fmt.Fprintf(out, "✔ "+format+"\n", args...) }
	fail := func(format string, args ...any) { failed++; fmt.Fprintf(out, "✗ "+format+"\n", args...) }

	fmt.Fprintf(out, "► checking the Kubernetes version\n")
	info, err := dc.ServerVersion()
	if err != nil {
		return 0, fmt.Errorf("reading the API server's version: %w", err)
	}
	v, err := version.ParseGeneric(info.GitVersion)
	switch {
	case err != nil:
		fail("Kubernetes %q: not a version this plumb can compare with %s", info.GitVersion, MinKubernetes)
	case v.LessThan(version.MustParseGeneric(MinKubernetes)):
		fail("Kubernetes %s: Plumb needs %s or later", info.GitVersion, strings.TrimSuffix(MinKubernetes, ".0"))
	default:
		ok("Kubernetes %s >= %s", info.GitVersion, strings.TrimSuffix(MinKubernetes, ".0"))
		if served, err := ServesAdmissionPolicy(dc); err == nil && !served {
			fmt.Fprintf(out, "◎ MutatingAdmissionPolicy is not served (Kubernetes %s): the install leaves sync-controller's finalizer policy out, and sync-controller adds its finalizer itself\n",
				strings.TrimSuffix(AdmissionPolicyKubernetes, ".0"))
		}
	}

	fmt.Fprintf(out, "► checking the rights to install\n")
	for _, a := range accessNeeded(c, objs) {
		allowed, reason, err := selfAccess(ctx, c, a)
		if err != nil {
			return failed, fmt.Errorf("asking the API server (SelfSubjectAccessReview): %w", err)
		}
		if allowed {
			ok("%s", a)
		} else {
			fail("%s: denied%s", a, reasonSuffix(reason))
		}
	}
	if binds := clusterAdminBindings(objs); len(binds) > 0 {
		allowed, err := mayGrantClusterAdmin(ctx, c)
		if err != nil {
			return failed, fmt.Errorf("asking the API server (SelfSubjectAccessReview): %w", err)
		}
		if allowed {
			ok("grant cluster-admin (%s)", strings.Join(binds, ", "))
		} else {
			fail("grant cluster-admin (%s): denied (RBAC lets only a holder of every right, or of bind on ClusterRole cluster-admin, bind it)", strings.Join(binds, ", "))
		}
	}
	return failed, nil
}

// clusterAdminBindings names the ClusterRoleBindings of objs to
// cluster-admin (sync-controller's, unless components/sync-restricted).
func clusterAdminBindings(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, u := range objs {
		if u.GetKind() != "ClusterRoleBinding" {
			continue
		}
		if name, _, _ := unstructured.NestedString(u.Object, "roleRef", "name"); name == "cluster-admin" {
			out = append(out, u.GetName())
		}
	}
	return out
}

// mayGrantClusterAdmin asks whether the caller may create a binding to
// cluster-admin: RBAC allows it to one who holds every right already, or
// who may bind that ClusterRole.
func mayGrantClusterAdmin(ctx context.Context, c client.Client) (bool, error) {
	for _, attrs := range []authorizationv1.ResourceAttributes{
		{Verb: "*", Group: "*", Resource: "*"},
		{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "cluster-admin"},
	} {
		r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
		if err := c.Create(ctx, r); err != nil {
			return false, err
		}
		if r.Status.Allowed {
			return true, nil
		}
	}
	return false, nil
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return " (" + r + ")"
}

// access is one right the install needs.
type access struct {
	verbs     []string
	group     string
	resource  string
	namespace string
}

func (a access) String() string {
	res := a.resource
	if a.group != "" {
		res += "." + a.group
	}
	where := "cluster-wide"
	if a.namespace != "" {
		where = "in " + a.namespace
	}
	return fmt.Sprintf("%s %s %s", strings.Join(a.verbs, ", "), res, where)
}

// accessNeeded lists, once per resource and namespace, create and patch
// for each kind of objs (server-side apply is a patch that creates), in
// the order the kinds first appear, and what Apply does besides: create
// and read the NATS credentials, read the CRDs and Deployments it waits
// for.
func accessNeeded(c client.Client, objs []*unstructured.Unstructured) []access {
	var out []access
	seen := map[string]bool{}
	add := func(a access) {
		key := a.String()
		if !seen[key] {
			seen[key] = true
			out = append(out, a)
		}
	}
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		m, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			// A kind the server does not serve: the apply will say so.
			continue
		}
		ns := u.GetNamespace()
		if m.Scope.Name() != "namespace" {
			ns = ""
		}
		add(access{verbs: []string{"create", "patch"}, group: gvk.Group, resource: m.Resource.Resource, namespace: ns})
	}
	add(access{verbs: []string{"get", "create"}, resource: "secrets", namespace: Namespace})
	add(access{verbs: []string{"get"}, group: "apiextensions.k8s.io", resource: "customresourcedefinitions"})
	add(access{verbs: []string{"get"}, group: "apps", resource: "deployments", namespace: Namespace})
	return out
}

// selfAccess asks whether the caller may do every verb of a.
func selfAccess(ctx context.Context, c client.Client, a access) (bool, string, error) {
	for _, verb := range a.verbs {
		r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: a.namespace, Verb: verb, Group: a.group, Resource: a.resource,
			},
		}}
		if err := c.Create(ctx, r); err != nil {
			return false, "", err
		}
		if !r.Status.Allowed {
			reason := r.Status.Reason
			if reason == "" {
				reason = "no rule allows " + verb
			}
			return false, reason, nil
		}
	}
	return true, "", nil
}
