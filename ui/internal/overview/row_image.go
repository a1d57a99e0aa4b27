package overview

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "plumb.dev/api/image/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// imageRow is the row of one of image-controller's kinds; nil for any
// other object. Its revision is what the object stands at, in the
// overview's Revision column: a policy's latest image (name:tag, and
// @digest with digest reflection), an automation's last pushed commit, a
// repository's last scan (a digest of its tags). Last sync is the last
// scan or push.
func imageRow(obj client.Object) *Row {
	switch o := obj.(type) {
	case *imagev1.ImagePolicy:
		r := conditionsRow(imagev1.ImagePolicyKind, o, o.Status.Conditions, o.Spec.Suspend)
		if o.Status.LatestRef != nil {
			r.Revision = o.Status.LatestRef.String()
		}
		r.Source = &Ref{Kind: imagev1.ImageRepositoryKind, Namespace: o.Spec.ImageRepositoryRef.Namespace, Name: o.Spec.ImageRepositoryRef.Name}
		if r.Source.Namespace == "" {
			r.Source.Namespace = o.Namespace
		}
		return r
	case *imagev1.ImageRepository:
		r := conditionsRow(imagev1.ImageRepositoryKind, o, o.Status.Conditions, o.Spec.Suspend)
		if s := o.Status.LastScanResult; s != nil {
			r.Revision = s.Revision
			if !s.ScanTime.IsZero() {
				t := s.ScanTime.UTC()
				r.LastSync = &t
			}
		}
		return r
	case *imagev1.ImageUpdateAutomation:
		r := conditionsRow(imagev1.ImageUpdateAutomationKind, o, o.Status.Conditions, o.Spec.Suspend)
		if c := o.Status.LastPushCommit; c != "" {
			r.Revision = "sha1:" + c
		}
		if t := o.Status.LastPushTime; t != nil {
			u := t.UTC()
			r.LastSync = &u
		}
		kind := o.Spec.SourceRef.Kind
		if kind == "" {
			kind = sourcev1.GitRepositoryKind
		}
		ns := o.Spec.SourceRef.Namespace
		if ns == "" {
			ns = o.Namespace
		}
		r.Source = &Ref{Kind: kind, Namespace: ns, Name: o.Spec.SourceRef.Name}
		return r
	}
	return nil
}
