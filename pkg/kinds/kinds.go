package kinds

import (
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	imagev1 "plumb.dev/api/image/v1"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	setv1 "plumb.dev/api/set/v1"
	sourcev1 "plumb.dev/api/source/v1"
	sourceextv1beta1 "plumb.dev/api/sourceext/v1beta1"
)

// The controllers that reconcile Plumb's kinds.
const (
	SourceController       = "source-controller"
	RenderController       = "render-controller"
	SyncController         = "sync-controller"
	NotificationController = "notification-controller"
	ImageController        = "image-controller"
)

// Kind is one of Plumb's kinds.
type Kind struct {
	// GVK is its group, version and Kind ("Kustomization").
	GVK schema.GroupVersionKind
	// Resource is its plural resource name, as RBAC and access reviews
	// name it ("kustomizations").
	Resource string
	// Plural is its Kind in the plural, as tables and messages write it
	// ("Kustomizations").
	Plural string
	// ShortNames are the CRD's short names ("ks").
	ShortNames []string
	// Controllers reconcile it, the first owning its Ready condition; none
	// for a kind another program writes (ExternalArtifact).
	Controllers []string
	// Source says a Kustomization may name it in spec.sourceRef: its
	// artifact is a tar.gz of files to build.
	Source bool

	newObject func() client.Object
	newList   func() client.ObjectList
	// typ and requestable are read once from an object of the kind (init),
	// so Of and Requestable make none on the paths that call them per
	// object or per webhook call.
	typ         reflect.Type
	requestable bool
}

// Route is the kind's lower-case singular name, the UI's routes' and the
// command line's first name for it ("kustomization").
func (k Kind) Route() string { return strings.ToLower(k.GVK.Kind) }

// Group is the kind's API group.
func (k Kind) Group() string { return k.GVK.Group }

// New returns an empty object of the kind.
func (k Kind) New() client.Object { return k.newObject() }

// NewList returns an empty list of the kind.
func (k Kind) NewList() client.ObjectList { return k.newList() }

// Requestable says whether the kind honours the requestedAt annotation
// (meta.Requestable): a webhook, plumb reconcile and the UI may ask for
// its reconcile.
func (k Kind) Requestable() bool { return k.requestable }

// all is every kind, in the order of their Kind names.
var all = []Kind{
	{GVK: sourcev1.GroupVersion.WithKind(sourcev1.BucketKind), Resource: "buckets", Plural: "Buckets",
		Controllers: []string{SourceController}, Source: true,
		newObject: func() client.Object { return &sourcev1.Bucket{} }, newList: func() client.ObjectList { return &sourcev1.BucketList{} }},
	{GVK: sourceextv1beta1.GroupVersion.WithKind(sourceextv1beta1.ArtifactGeneratorKind), Resource: "artifactgenerators", Plural: "ArtifactGenerators",
		ShortNames: []string{"ag"}, Controllers: []string{SourceController},
		newObject: func() client.Object { return &sourceextv1beta1.ArtifactGenerator{} }, newList: func() client.ObjectList { return &sourceextv1beta1.ArtifactGeneratorList{} }},
	{GVK: sourcev1.GroupVersion.WithKind(sourcev1.ExternalArtifactKind), Resource: "externalartifacts", Plural: "ExternalArtifacts",
		Source:    true,
		newObject: func() client.Object { return &sourcev1.ExternalArtifact{} }, newList: func() client.ObjectList { return &sourcev1.ExternalArtifactList{} }},
	{GVK: sourcev1.GroupVersion.WithKind(sourcev1.GitRepositoryKind), Resource: "gitrepositories", Plural: "GitRepositories",
		ShortNames: []string{"gitrepo"}, Controllers: []string{SourceController}, Source: true,
		newObject: func() client.Object { return &sourcev1.GitRepository{} }, newList: func() client.ObjectList { return &sourcev1.GitRepositoryList{} }},
	{GVK: sourcev1.GroupVersion.WithKind(sourcev1.HelmChartKind), Resource: "helmcharts", Plural: "HelmCharts",
		ShortNames: []string{"hc"}, Controllers: []string{SourceController},
		newObject: func() client.Object { return &sourcev1.HelmChart{} }, newList: func() client.ObjectList { return &sourcev1.HelmChartList{} }},
	{GVK: helmv2.GroupVersion.WithKind(helmv2.HelmReleaseKind), Resource: "helmreleases", Plural: "HelmReleases",
		ShortNames: []string{"hr"}, Controllers: []string{SyncController, RenderController},
		newObject: func() client.Object { return &helmv2.HelmRelease{} }, newList: func() client.ObjectList { return &helmv2.HelmReleaseList{} }},
	{GVK: sourcev1.GroupVersion.WithKind(sourcev1.HelmRepositoryKind), Resource: "helmrepositories", Plural: "HelmRepositories",
		ShortNames: []string{"helmrepo"}, Controllers: []string{SourceController},
		newObject: func() client.Object { return &sourcev1.HelmRepository{} }, newList: func() client.ObjectList { return &sourcev1.HelmRepositoryList{} }},
	{GVK: imagev1.GroupVersion.WithKind(imagev1.ImagePolicyKind), Resource: "imagepolicies", Plural: "ImagePolicies",
		ShortNames: []string{"imgpol", "imagepol"}, Controllers: []string{ImageController},
		newObject: func() client.Object { return &imagev1.ImagePolicy{} }, newList: func() client.ObjectList { return &imagev1.ImagePolicyList{} }},
	{GVK: imagev1.GroupVersion.WithKind(imagev1.ImageRepositoryKind), Resource: "imagerepositories", Plural: "ImageRepositories",
		ShortNames: []string{"imgrepo", "imagerepo"}, Controllers: []string{ImageController},
		newObject: func() client.Object { return &imagev1.ImageRepository{} }, newList: func() client.ObjectList { return &imagev1.ImageRepositoryList{} }},
	{GVK: imagev1.GroupVersion.WithKind(imagev1.ImageUpdateAutomationKind), Resource: "imageupdateautomations", Plural: "ImageUpdateAutomations",
		ShortNames: []string{"iua", "imgupd", "imgauto"}, Controllers: []string{ImageController},
		newObject: func() client.Object { return &imagev1.ImageUpdateAutomation{} }, newList: func() client.ObjectList { return &imagev1.ImageUpdateAutomationList{} }},
	{GVK: kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind), Resource: "kustomizations", Plural: "Kustomizations",
		ShortNames: []string{"ks"}, Controllers: []string{SyncController, RenderController},
		newObject: func() client.Object { return &kustomizev1.Kustomization{} }, newList: func() client.ObjectList { return &kustomizev1.KustomizationList{} }},
	{GVK: setv1.GroupVersion.WithKind(setv1.ObjectSetKind), Resource: "objectsets", Plural: "ObjectSets",
		ShortNames: []string{"os", "objset"}, Controllers: []string{SyncController},
		newObject: func() client.Object { return &setv1.ObjectSet{} }, newList: func() client.ObjectList { return &setv1.ObjectSetList{} }},
	// Read by sync-controller, which reconciles the objects it selects,
	// not it: no status, no controller of its own.
	{GVK: kustomizev1.GroupVersion.WithKind(kustomizev1.SyncWindowPolicyKind), Resource: "syncwindowpolicies", Plural: "SyncWindowPolicies",
		ShortNames: []string{"swp"},
		newObject:  func() client.Object { return &kustomizev1.SyncWindowPolicy{} }, newList: func() client.ObjectList { return &kustomizev1.SyncWindowPolicyList{} }},
	{GVK: sourcev1.GroupVersion.WithKind(sourcev1.OCIRepositoryKind), Resource: "ocirepositories", Plural: "OCIRepositories",
		ShortNames: []string{"ocirepo"}, Controllers: []string{SourceController}, Source: true,
		newObject: func() client.Object { return &sourcev1.OCIRepository{} }, newList: func() client.ObjectList { return &sourcev1.OCIRepositoryList{} }},
	{GVK: notificationv1.GroupVersion.WithKind(notificationv1.AlertKind), Resource: "alerts", Plural: "Alerts",
		Controllers: []string{NotificationController},
		newObject:   func() client.Object { return &notificationv1.Alert{} }, newList: func() client.ObjectList { return &notificationv1.AlertList{} }},
	{GVK: notificationv1.GroupVersion.WithKind(notificationv1.ProviderKind), Resource: "providers", Plural: "Providers",
		Controllers: []string{NotificationController},
		newObject:   func() client.Object { return &notificationv1.Provider{} }, newList: func() client.ObjectList { return &notificationv1.ProviderList{} }},
	{GVK: notificationv1.GroupVersion.WithKind(notificationv1.ReceiverKind), Resource: "receivers", Plural: "Receivers",
		Controllers: []string{NotificationController},
		newObject:   func() client.Object { return &notificationv1.Receiver{} }, newList: func() client.ObjectList { return &notificationv1.ReceiverList{} }},
}

func init() {
	slices.SortFunc(all, func(a, b Kind) int { return strings.Compare(a.GVK.Kind, b.GVK.Kind) })
	for i := range all {
		obj := all[i].New()
		all[i].typ = reflect.TypeOf(obj)
		_, all[i].requestable = obj.(meta.Requestable)
	}
}

// All returns every kind in the order of their Kind names.
func All() []Kind { return slices.Clone(all) }

// Where returns the kinds for which keep is true, in the order of All.
func Where(keep func(Kind) bool) []Kind {
	var out []Kind
	for _, k := range all {
		if keep(k) {
			out = append(out, k)
		}
	}
	return out
}

// Lookup finds a kind by its Kind, route, resource or a short name, in any
// case ("Kustomization", "kustomizations", "ks").
func Lookup(name string) (Kind, bool) {
	for _, k := range all {
		if strings.EqualFold(name, k.GVK.Kind) || strings.EqualFold(name, k.Resource) ||
			slices.ContainsFunc(k.ShortNames, func(s string) bool { return strings.EqualFold(name, s) }) {
			return k, true
		}
	}
	return Kind{}, false
}

// Of returns the kind of obj, by its Go type.
func Of(obj client.Object) (Kind, bool) {
	for _, k := range all {
		if k.typ == reflect.TypeOf(obj) {
			return k, true
		}
	}
	return Kind{}, false
}

// AddToScheme registers every API group of Plumb's kinds.
func AddToScheme(s *runtime.Scheme) error {
	for _, add := range []func(*runtime.Scheme) error{
		sourcev1.AddToScheme, sourceextv1beta1.AddToScheme, kustomizev1.AddToScheme, helmv2.AddToScheme, notificationv1.AddToScheme,
		imagev1.AddToScheme, setv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return err
		}
	}
	return nil
}

// NewScheme returns a scheme with Kubernetes' built-in kinds and every
// API group of Plumb's: the one scheme of the controllers, the command
// line, the UI and the tests.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(AddToScheme(s))
	return s
}

// FieldManager is the field manager of a controller's writes, the one rule
// for all of them: "plumb-" and the controller's name without
// "-controller" ("plumb-sync"), then, for a write that must own its fields
// apart from the controller's others, its purpose ("plumb-sync-inventory",
// "plumb-render-finalizer"). The UI's writes are "plumb-ui".
func FieldManager(controller string, purpose ...string) string {
	return strings.Join(append([]string{"plumb", strings.TrimSuffix(controller, "-controller")}, purpose...), "-")
}
