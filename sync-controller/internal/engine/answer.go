package engine

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// existenceKinds are the kinds whose health pkg/health tells by their
// existence alone: they have no status, and no spec its rules read
// (generic's spec.suspend, observedGeneration and conditions are never
// there). What a caller reads of such an object after its write — its
// health, the run's tally, the engine's records — is all in its metadata.
var existenceKinds = map[schema.GroupKind]bool{
	{Kind: "ConfigMap"}:      true,
	{Kind: "Secret"}:         true,
	{Kind: "ServiceAccount"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}:               true,
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:        true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:        true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: true,
}

// answerIsMetadata reports whether a write of desired may be answered with
// its metadata only (PartialObjectMetadata, manage.ApplyMetadata) rather
// than the whole object: when nothing waits on the health of what the
// write stored (notWaitedOn, Options.NotWaitedOn), or when its health is
// told by its existence, so that a wait reads no more of the answer. Most
// objects of an application are such (ConfigMaps, Services); the whole
// answer of each cost the API server a JSON encoding and this process a
// JSON decoding into maps and a copy of the desired object
// (docs/bench/sync.md, "Issue 46, items 3–4").
//
// A Service is one when it cannot be a LoadBalancer, whose health waits for
// an address in its status: Git sets its type to another (the apply owns
// the field, with force), or it is headless (clusterIP None, which the API
// server allows only for type ClusterIP, and clusterIP is immutable).
// Health checks in CEL (WithHealthChecks) may read any field of any kind:
// an engine with them asks for the whole object where anything waits.
func (e *Engine) answerIsMetadata(desired *unstructured.Unstructured, notWaitedOn bool) bool {
	if notWaitedOn {
		return true
	}
	if e.checks != nil {
		return false
	}
	gk := desired.GroupVersionKind().GroupKind()
	if existenceKinds[gk] {
		return true
	}
	if gk != serviceKind {
		return false
	}
	spec, _ := desired.Object["spec"].(map[string]any)
	switch typ, _ := spec["type"].(string); typ {
	case "ClusterIP", "NodePort", "ExternalName":
		return true
	case "":
		clusterIP, _ := spec["clusterIP"].(string)
		return clusterIP == "None"
	}
	return false
}

var serviceKind = schema.GroupKind{Kind: "Service"}

// answerTellsHealth reports whether applied, an object of desired as a
// write's Result carries it, is enough for a health wait to judge: a
// whole answer, or a metadata answer (metadataOnly: apiVersion, kind and
// metadata, nothing else) that answerIsMetadata would ask for with a wait
// to come, because the kind's health is told by what it holds. A metadata
// answer asked for only because nothing was to wait
// (Options.NotWaitedOn: a Deployment's, a LoadBalancer's, any kind's
// under health checks in CEL) is not: the wait reads the object rather
// than judge a Deployment without its status. (A whole answer with no
// field but those, a custom resource's without spec or status, is read
// again too: one GET more, the verdict the same.)
func (e *Engine) answerTellsHealth(applied, desired *unstructured.Unstructured) bool {
	for field := range applied.Object {
		if field != "apiVersion" && field != "kind" && field != "metadata" {
			return true
		}
	}
	return e.answerIsMetadata(desired, false)
}

// metadataOnly is an applied object as Result.Object carries it when the
// answer was metadata: desired's apiVersion and kind, and the stored
// metadata that health, prunes and the tally read (not managedFields,
// which the engine's records take from stored itself).
func metadataOnly(desired *unstructured.Unstructured, stored *metav1.PartialObjectMetadata) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": desired.GetAPIVersion(),
		"kind":       desired.GetKind(),
	}}
	obj.SetName(stored.Name)
	obj.SetNamespace(stored.Namespace)
	obj.SetUID(stored.UID)
	obj.SetResourceVersion(stored.ResourceVersion)
	obj.SetGeneration(stored.Generation)
	obj.SetCreationTimestamp(stored.CreationTimestamp)
	obj.SetLabels(stored.Labels)
	obj.SetAnnotations(stored.Annotations)
	obj.SetFinalizers(stored.Finalizers)
	obj.SetDeletionTimestamp(stored.DeletionTimestamp)
	obj.SetOwnerReferences(stored.OwnerReferences)
	return obj
}
