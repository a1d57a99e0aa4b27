package argoconvert

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// syncVerbs are what sync-controller does to an object as the
// ServiceAccount: read it, dry-run and apply it, watch it for drift,
// prune it.
var syncVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

// builtinNamespaced and builtinClusterScoped are the built-in resources
// a blacklist is taken out of: RBAC grants, it cannot deny, so "all but
// these" must be written as a list.
var builtinNamespaced = map[string][]string{
	"":                          {"configmaps", "endpoints", "events", "limitranges", "persistentvolumeclaims", "pods", "podtemplates", "replicationcontrollers", "resourcequotas", "secrets", "serviceaccounts", "services"},
	"apps":                      {"controllerrevisions", "daemonsets", "deployments", "replicasets", "statefulsets"},
	"autoscaling":               {"horizontalpodautoscalers"},
	"batch":                     {"cronjobs", "jobs"},
	"coordination.k8s.io":       {"leases"},
	"discovery.k8s.io":          {"endpointslices"},
	"networking.k8s.io":         {"ingresses", "networkpolicies"},
	"policy":                    {"poddisruptionbudgets"},
	"rbac.authorization.k8s.io": {"rolebindings", "roles"},
}

var builtinClusterScoped = map[string][]string{
	"":                             {"namespaces", "nodes", "persistentvolumes"},
	"admissionregistration.k8s.io": {"mutatingwebhookconfigurations", "validatingwebhookconfigurations"},
	"apiextensions.k8s.io":         {"customresourcedefinitions"},
	"networking.k8s.io":            {"ingressclasses"},
	"rbac.authorization.k8s.io":    {"clusterrolebindings", "clusterroles"},
	"scheduling.k8s.io":            {"priorityclasses"},
	"storage.k8s.io":               {"csidrivers", "storageclasses", "volumeattachments"},
}

// groupKind is an entry of an AppProject's resource lists.
type groupKind struct{ group, kind string }

func (c *converter) appProject(top, md *fields) []runtime.Object {
	a := c.appMeta(md)
	spec := top.obj("spec")
	if spec == nil {
		c.n.errf("spec: missing")
		return nil
	}
	sa := projectServiceAccount(a.name)
	var objs []runtime.Object
	spec.skip("description", "kept nowhere")
	if repos := spec.strs("sourceRepos"); len(repos) > 0 {
		c.n.addf("spec.sourceRepos: %s: not enforced: Plumb does not restrict a ServiceAccount's source URLs; run the controllers with --no-cross-namespace-refs and keep tenants' sources in their namespaces", strings.Join(repos, ", "))
	}

	var namespaces []string
	allNamespaces := false
	for _, d := range spec.objs("destinations") {
		server, name, ns := d.str("server"), d.str("name"), d.str("namespace")
		d.done()
		local := server == inClusterServer || name == inClusterName || server == "*" || name == "*" || (server == "" && name == "")
		if !local {
			c.n.addf("%s: the cluster %s%s: apply this ServiceAccount's RBAC in that cluster too (Plumb impersonates %s/%s there)", d.path, server, name, a.namespace, sa)
		}
		if server == "*" || name == "*" {
			c.n.addf("%s: every cluster: the RBAC here is for the cluster Plumb runs in; apply it in the others too", d.path)
		}
		switch {
		case ns == "" || ns == "*":
			allNamespaces = true
		case strings.ContainsAny(ns, "*?[!"):
			allNamespaces = true
			c.n.addf("%s: the namespace pattern %s: RBAC has no patterns, the rights are granted in every namespace (ClusterRoleBinding); narrow it by hand", d.path, ns)
		default:
			namespaces = append(namespaces, ns)
		}
	}
	namespaces = uniqueSorted(namespaces)

	for _, ns := range namespaces {
		objs = append(objs, &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: ns},
		})
	}
	objs = append(objs, &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: a.namespace, Labels: a.labels},
	})
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: a.namespace}}

	nsRules := c.rules(spec, "namespaceResourceWhitelist", "namespaceResourceBlacklist", builtinNamespaced, true)
	roleName := "plumb-project-" + a.name
	if len(nsRules) > 0 && (allNamespaces || len(namespaces) > 0) {
		objs = append(objs, clusterRole(roleName, nsRules))
		if allNamespaces {
			objs = append(objs, clusterRoleBinding(roleName, roleName, subject))
		} else {
			for _, ns := range namespaces {
				objs = append(objs, &rbacv1.RoleBinding{
					TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
					ObjectMeta: metav1.ObjectMeta{Name: roleName, Namespace: ns},
					RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
					Subjects:   subject,
				})
			}
		}
	}
	clusterRules := c.rules(spec, "clusterResourceWhitelist", "clusterResourceBlacklist", builtinClusterScoped, false)
	if len(clusterRules) > 0 {
		name := roleName + "-cluster"
		objs = append(objs, clusterRole(name, clusterRules), clusterRoleBinding(name, name, subject))
	}

	spec.skip("roles", "Argo CD's project roles (policies, groups, JWT tokens) are for Argo CD's API and UI; Plumb's UI uses each user's own Kubernetes RBAC")
	spec.skip("syncWindows", "Plumb has no sync windows yet")
	spec.skip("signatureKeys", "use spec.verify on each GitRepository with the OpenPGP keys in a Secret")
	spec.skip("orphanedResources", "Plumb does not watch for objects outside the inventory")
	spec.skip("sourceNamespaces", "Plumb's objects live in the tenant's namespace: no list of namespaces is needed")
	spec.skip("destinationServiceAccounts", "spec.serviceAccountName on each Kustomization is the identity; this project's is "+sa)
	spec.skip("permitOnlyProjectScopedClusters", "kubeconfig Secrets are per namespace in Plumb")
	spec.done()
	return objs
}

// rules turns an AppProject's allow and deny lists into RBAC rules.
// Argo CD's defaults: everything namespaced allowed, nothing
// cluster-scoped (an empty allow list).
func (c *converter) rules(spec *fields, allowKey, denyKey string, builtin map[string][]string, namespaced bool) []rbacv1.PolicyRule {
	allow := c.groupKinds(spec, allowKey)
	deny := c.groupKinds(spec, denyKey)
	if namespaced && !spec.has(allowKey) {
		allow = []groupKind{{"*", "*"}}
	}
	if len(allow) == 0 {
		return nil
	}
	var rules []rbacv1.PolicyRule
	wildcard := false
	for _, gk := range allow {
		if gk.kind == "*" {
			wildcard = true
			break
		}
	}
	if wildcard && len(deny) > 0 {
		// RBAC cannot deny: grant the built-in resources but the denied.
		denied := map[groupKind]bool{}
		for _, gk := range deny {
			denied[groupKind{gk.group, resourceOf(gk.kind)}] = true
		}
		for _, g := range sortedKeys(builtin) {
			var res []string
			for _, r := range builtin[g] {
				if !denied[groupKind{g, r}] && !denied[groupKind{"*", r}] && !denied[groupKind{g, "*"}] {
					res = append(res, r)
				}
			}
			if len(res) > 0 {
				rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: res, Verbs: syncVerbs})
			}
		}
		c.n.addf("spec.%s: RBAC grants and cannot deny: the built-in resources but these are granted; add the custom resources the project may write", denyKey)
		return rules
	}
	if len(deny) > 0 {
		c.n.addf("spec.%s: not needed: only what %s lists is granted", denyKey, allowKey)
	}
	byGroup := map[string][]string{}
	for _, gk := range allow {
		byGroup[gk.group] = append(byGroup[gk.group], resourceOf(gk.kind))
	}
	for _, g := range sortedKeys(byGroup) {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: uniqueSorted(byGroup[g]), Verbs: syncVerbs})
	}
	if len(allow) > 0 && !(len(allow) == 1 && allow[0] == groupKind{"*", "*"}) {
		c.n.addf("spec.%s: kinds are granted as RBAC resources, their lower-case plurals: check the irregular ones", allowKey)
	}
	return rules
}

func (c *converter) groupKinds(spec *fields, key string) []groupKind {
	var out []groupKind
	for _, e := range spec.objs(key) {
		gk := groupKind{e.str("group"), e.str("kind")}
		e.done()
		if gk.kind == "" {
			c.n.errf("%s: kind missing", e.path)
			continue
		}
		if strings.ContainsAny(gk.group, "?[") || strings.ContainsAny(gk.kind, "?[") || (gk.kind != "*" && strings.Contains(gk.kind, "*")) {
			c.n.addf("%s: the pattern %s/%s: RBAC has no patterns, left out", e.path, gk.group, gk.kind)
			continue
		}
		out = append(out, gk)
	}
	return out
}

// resourceOf is the RBAC resource of a kind: its lower-case plural.
func resourceOf(kind string) string {
	if kind == "*" {
		return "*"
	}
	k := strings.ToLower(kind)
	switch {
	case k == "endpoints":
		return k
	case strings.HasSuffix(k, "y") && !strings.HasSuffix(k, "ay") && !strings.HasSuffix(k, "ey") && !strings.HasSuffix(k, "oy"):
		return k[:len(k)-1] + "ies"
	case strings.HasSuffix(k, "s"), strings.HasSuffix(k, "x"), strings.HasSuffix(k, "ch"), strings.HasSuffix(k, "sh"):
		return k + "es"
	default:
		return k + "s"
	}
}

func clusterRole(name string, rules []rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      rules,
	}
}

func clusterRoleBinding(name, role string, subjects []rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}
}

func uniqueSorted(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}
