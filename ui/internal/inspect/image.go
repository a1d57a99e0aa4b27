package inspect

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "plumb.dev/api/image/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// maxAutomations bounds the ImageUpdateAutomations one policy page lists
// to find those that select the policy: a namespace of more is named as
// not fully read rather than listed page after page.
const maxAutomations = 500

// imageView is what an image-controller object's page adds to the page
// (docs/design/ui.md, "Object pages"). A commit the automation made is on
// the event stream (its Succeeded events, with the commit and the images in
// their metadata), which the front end reads from GET /api/events.
type imageView struct {
	// Latest and Previous are a policy's status.latestRef and
	// observedPreviousRef.
	Latest   *imagev1.ImageRef `json:"latest,omitempty"`
	Previous *imagev1.ImageRef `json:"previous,omitempty"`
	// Automations are the ImageUpdateAutomations of a policy's namespace
	// whose policySelector selects it; AutomationsNote says why they are
	// not known (the user may not list them) or not all of them.
	Automations     []objectRef `json:"automations,omitempty"`
	AutomationsNote string      `json:"automationsNote,omitempty"`

	// An automation's last push and run, and the images it last saw of
	// its policies (status.observedPolicies, by policy name).
	LastPushCommit string                      `json:"lastPushCommit,omitempty"`
	LastPushTime   *metav1.Time                `json:"lastPushTime,omitempty"`
	LastRunTime    *metav1.Time                `json:"lastRunTime,omitempty"`
	Policies       map[string]imagev1.ImageRef `json:"policies,omitempty"`
}

// objectRef names one object.
type objectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// imagePage fills the sources and the image view of image-controller's
// kinds, and leaves the page of any other kind as it is.
func imagePage(ctx context.Context, c client.Client, obj client.Object, page *objectPage) {
	switch o := obj.(type) {
	case *imagev1.ImagePolicy:
		ns := o.Spec.ImageRepositoryRef.Namespace
		if ns == "" {
			ns = o.Namespace
		}
		page.Sources = append(page.Sources, readSource(ctx, c, &imagev1.ImageRepository{}, imagev1.ImageRepositoryKind, types.NamespacedName{Namespace: ns, Name: o.Spec.ImageRepositoryRef.Name}))
		page.Image = &imageView{Latest: o.Status.LatestRef, Previous: o.Status.ObservedPreviousRef}
		page.Image.Automations, page.Image.AutomationsNote = automationsOf(ctx, c, o)
		if o.Status.LatestRef != nil {
			page.Revision = o.Status.LatestRef.String()
		}
	case *imagev1.ImageRepository:
		if s := o.Status.LastScanResult; s != nil {
			page.Revision = s.Revision
			page.LastSync = &s.ScanTime
		}
	case *imagev1.ImageUpdateAutomation:
		ns := o.Spec.SourceRef.Namespace
		if ns == "" {
			ns = o.Namespace
		}
		page.Sources = append(page.Sources, readSource(ctx, c, &sourcev1.GitRepository{}, sourcev1.GitRepositoryKind, types.NamespacedName{Namespace: ns, Name: o.Spec.SourceRef.Name}))
		page.Image = &imageView{LastPushCommit: o.Status.LastPushCommit, LastPushTime: o.Status.LastPushTime,
			LastRunTime: o.Status.LastAutomationRunTime, Policies: o.Status.ObservedPolicies}
		if c := o.Status.LastPushCommit; c != "" {
			page.Revision = "sha1:" + c
		}
		page.LastSync = o.Status.LastPushTime
	}
}

// automationsOf lists, with the user's identity, the automations of pol's
// namespace that select it (an automation selects the policies of its own
// namespace; no policySelector selects them all), and a note when they
// cannot be known or are not all read.
func automationsOf(ctx context.Context, c client.Client, pol *imagev1.ImagePolicy) ([]objectRef, string) {
	list := &imagev1.ImageUpdateAutomationList{}
	if err := c.List(ctx, list, client.InNamespace(pol.Namespace), client.Limit(maxAutomations)); err != nil {
		return nil, "the automations that use this policy are not known: " + err.Error()
	}
	var out []objectRef
	for _, a := range list.Items {
		sel := labels.Everything()
		if a.Spec.PolicySelector != nil {
			s, err := metav1.LabelSelectorAsSelector(a.Spec.PolicySelector)
			if err != nil {
				continue // image-controller refuses it too
			}
			sel = s
		}
		if sel.Matches(labels.Set(pol.Labels)) {
			out = append(out, objectRef{Kind: imagev1.ImageUpdateAutomationKind, Namespace: a.Namespace, Name: a.Name})
		}
	}
	if list.Continue != "" {
		return out, fmt.Sprintf("only the first %d automations of the namespace were looked at", maxAutomations)
	}
	return out, ""
}
