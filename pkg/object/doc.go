// Package object is Plumb's object model on the sync side: how an object in
// a rendered set is named, where its kind falls in the apply order, and how
// the rendered multi-document stream is read back into objects.
//
// # Identity
//
// ID is an object's identity in a cluster: group, kind, namespace and name,
// the version left out (an object moved to another version of its kind is
// the same object), like gitops-engine's ResourceKey. It is comparable, so
// it keys maps directly. ID.String is the short form messages, events and
// status use: <kind>/<namespace>/<name>, or <kind>/<name> for a
// cluster-scoped object.
//
// Every package that names objects uses it: pkg/render (duplicates and the
// canonical order of a build), pkg/plan (the order and duplicates of a
// sync), pkg/inventory (what left the set), pkg/diff (the object of a
// Result), sync-controller's engine (its memory, results and errors) and
// the plumb CLI.
//
// # Why a package of its own
//
// The identity is needed by render-controller's build, which never talks
// to a cluster, as much as by the code that writes to one (pkg/manage,
// the engine). This package depends on k8s.io/apimachinery alone, so that
// naming an object pulls in no client, no API types and no events.
//
// # The kind order
//
// Within a sync wave objects are applied in one fixed kind order (Rank,
// Less), the order Argo CD and Helm use:
//
//	Namespace, NetworkPolicy, ResourceQuota, LimitRange, ServiceAccount,
//	Secret, ConfigMap, StorageClass, PersistentVolume, PersistentVolumeClaim,
//	CustomResourceDefinition, ClusterRole, ClusterRoleBinding, Role,
//	RoleBinding, Service, DaemonSet, Pod, ReplicaSet, Deployment,
//	HorizontalPodAutoscaler, StatefulSet, Job, CronJob, IngressClass,
//	Ingress, APIService
//
// then every other kind (custom resources, and built-in kinds not listed)
// by kind, group, namespace and name. A listed kind counts only in its own
// API group (and the legacy extensions group where it once lived): a
// Knative serving.knative.dev Service is a custom resource. pkg/plan orders
// a sync by it and pkg/render the rendered manifests, so the artifact lists
// objects in the order a wave applies them.
//
// The two packages used to keep a table each. pkg/plan's, above, is what
// sync applied and what its tests check, and it won. pkg/render's differed:
// it put CustomResourceDefinition second (pkg/plan hoists a CRD ahead of
// its custom resources anyway), ranked PriorityClass, PodDisruptionBudget
// and ReplicationController, put Mutating- and
// ValidatingWebhookConfiguration after every other kind, and matched kinds
// by name in any group. Rendered manifests holding those kinds now come out
// in the order above, which changes their digest once.
//
// # Decoding
//
// DecodeManifests reads a rendered artifact back into objects, checking
// that each has the identity fields the rest relies on. It parses each YAML
// document with go-yaml v2 and converts the parser's values straight into
// the maps of unstructured objects, with the types that the JSON text
// round trip of apimachinery's YAMLOrJSONDecoder gave (every number a
// float64) — the apply bodies, the hashes and the comparisons with live
// objects depend on them. The JSON text cost the hand-off a third of the
// decode's time and allocations (BenchmarkDecodeManifests); the
// differential test and fuzz target of decode_diff_test.go hold the decoder
// to that reference.
//
// Only YAML streams take that path. A stream of JSON objects (its first
// non-space byte a brace, as apimachinery's GuessJSONStream sees it) goes
// to the YAMLOrJSONDecoder itself: JSON text costs no round trip there,
// and the decoder's rules for a stream that is not JSON after all (at
// most one JSON object, then YAML; which error is reported) stay its own
// rather than a copy kept in step by hand. Both paths read a []byte whose
// size the caller has already bounded.
package object
