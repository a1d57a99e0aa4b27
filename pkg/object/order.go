package object

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kindOrder is the apply order of kinds within a wave, keyed by group/kind
// (see the package doc).
var kindOrder = map[schema.GroupKind]int{}

func init() {
	for i, gks := range [][]string{
		{"/Namespace"},
		{"networking.k8s.io/NetworkPolicy", "extensions/NetworkPolicy"},
		{"/ResourceQuota"},
		{"/LimitRange"},
		{"/ServiceAccount"},
		{"/Secret"},
		{"/ConfigMap"},
		{"storage.k8s.io/StorageClass"},
		{"/PersistentVolume"},
		{"/PersistentVolumeClaim"},
		{"apiextensions.k8s.io/CustomResourceDefinition"},
		{"rbac.authorization.k8s.io/ClusterRole"},
		{"rbac.authorization.k8s.io/ClusterRoleBinding"},
		{"rbac.authorization.k8s.io/Role"},
		{"rbac.authorization.k8s.io/RoleBinding"},
		{"/Service"},
		{"apps/DaemonSet", "extensions/DaemonSet"},
		{"/Pod"},
		{"apps/ReplicaSet", "extensions/ReplicaSet"},
		{"apps/Deployment", "extensions/Deployment"},
		{"autoscaling/HorizontalPodAutoscaler"},
		{"apps/StatefulSet"},
		{"batch/Job"},
		{"batch/CronJob"},
		{"networking.k8s.io/IngressClass"},
		{"networking.k8s.io/Ingress", "extensions/Ingress"},
		{"apiregistration.k8s.io/APIService"},
	} {
		for _, gk := range gks {
			group, kind, _ := strings.Cut(gk, "/")
			kindOrder[schema.GroupKind{Group: group, Kind: kind}] = i
		}
	}
}

// OtherKinds is the rank of every kind the order does not list.
const OtherKinds = 1 << 20

// Rank returns the place of gk in the kind order, OtherKinds when it is
// not listed.
func Rank(gk schema.GroupKind) int {
	if r, ok := kindOrder[gk]; ok {
		return r
	}
	return OtherKinds
}

// Less is the apply order within a wave: kind rank; for kinds of one rank
// (the unlisted ones) the kind name, then the group; then namespace and
// name.
func Less(a, b ID) bool {
	if ra, rb := Rank(a.GroupKind()), Rank(b.GroupKind()); ra != rb {
		return ra < rb
	}
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	if a.Group != b.Group {
		return a.Group < b.Group
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}
