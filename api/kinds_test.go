package api_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	helmv2 "plumb.dev/api/helm/v2"
	imagev1 "plumb.dev/api/image/v1"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	setv1 "plumb.dev/api/set/v1"
	sourcev1 "plumb.dev/api/source/v1"
	sourceextv1beta1 "plumb.dev/api/sourceext/v1beta1"
)

// Every kind answers the questions of api/meta that its fields answer,
// with what those fields hold, and no other: a kind with spec.interval is
// meta.Scheduled, one with spec.suspend meta.Suspendable, one with
// status.artifact or status.renderedArtifact meta.ArtifactHolder, one with
// spec.retryInterval meta.Retried, one with status.lastHandledReconcileAt
// meta.Requestable, one with status.lastAppliedRevision meta.Applier. A
// new kind that forgets one fails here
// rather than being reconciled on no schedule.
func TestEveryKindDescribesItself(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{sourcev1.AddToScheme, sourceextv1beta1.AddToScheme, kustomizev1.AddToScheme, helmv2.AddToScheme, notificationv1.AddToScheme, imagev1.AddToScheme, setv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	groups := map[string]bool{sourcev1.GroupVersion.Group: true, sourceextv1beta1.GroupVersion.Group: true, kustomizev1.GroupVersion.Group: true, helmv2.GroupVersion.Group: true, notificationv1.GroupVersion.Group: true, imagev1.GroupVersion.Group: true, setv1.GroupVersion.Group: true}
	checked := 0
	for gvk, typ := range scheme.AllKnownTypes() {
		if !groups[gvk.Group] || strings.HasSuffix(gvk.Kind, "List") || typ.PkgPath() == "k8s.io/apimachinery/pkg/apis/meta/v1" {
			continue
		}
		checked++
		t.Run(gvk.Kind, func(t *testing.T) {
			obj := reflect.New(typ)
			spec, status := obj.Elem().FieldByName("Spec"), obj.Elem().FieldByName("Status")
			iface := obj.Interface()

			interval := field(spec, "Interval")
			_, scheduled := iface.(meta.Scheduled)
			if interval.IsValid() && interval.Type() == reflect.TypeOf(metav1.Duration{}) {
				if !scheduled {
					t.Fatal("has spec.interval but is not meta.Scheduled")
				}
				interval.Set(reflect.ValueOf(metav1.Duration{Duration: 7 * time.Minute}))
				if got := iface.(meta.Scheduled).GetRequeueAfter(); got != 7*time.Minute {
					t.Errorf("GetRequeueAfter() = %s with spec.interval 7m", got)
				}
			} else if scheduled {
				t.Error("is meta.Scheduled without spec.interval")
			}

			retry := field(spec, "RetryInterval")
			_, retried := iface.(meta.Retried)
			if retry.IsValid() {
				if !retried {
					t.Fatal("has spec.retryInterval but is not meta.Retried")
				}
				// Unset, it falls back to spec.interval, as Flux's does.
				if interval.IsValid() && interval.Type() == reflect.TypeOf(metav1.Duration{}) {
					if got, want := iface.(meta.Retried).GetRetryInterval(), interval.Interface().(metav1.Duration).Duration; got != want {
						t.Errorf("GetRetryInterval() = %s without spec.retryInterval, spec.interval %s", got, want)
					}
				}
				retry.Set(reflect.ValueOf(&metav1.Duration{Duration: 3 * time.Second}))
				if got := iface.(meta.Retried).GetRetryInterval(); got != 3*time.Second {
					t.Errorf("GetRetryInterval() = %s with spec.retryInterval 3s", got)
				}
			} else if retried {
				t.Error("is meta.Retried without spec.retryInterval")
			}

			suspend := field(spec, "Suspend")
			_, suspendable := iface.(meta.Suspendable)
			if suspend.IsValid() {
				if !suspendable {
					t.Fatal("has spec.suspend but is not meta.Suspendable")
				}
				suspend.SetBool(true)
				if !iface.(meta.Suspendable).IsSuspended() {
					t.Error("IsSuspended() false with spec.suspend true")
				}
			} else if suspendable {
				t.Error("is meta.Suspendable without spec.suspend")
			}

			artifact := field(status, "Artifact")
			if !artifact.IsValid() {
				artifact = field(status, "RenderedArtifact")
			}
			_, holder := iface.(meta.ArtifactHolder)
			if artifact.IsValid() {
				if !holder {
					t.Fatal("has an artifact in its status but is not meta.ArtifactHolder")
				}
				a := &meta.Artifact{Revision: "r"}
				artifact.Set(reflect.ValueOf(a))
				if got := iface.(meta.ArtifactHolder).GetArtifact(); got != a {
					t.Errorf("GetArtifact() = %v, not the status's artifact", got)
				}
			} else if holder {
				t.Error("is meta.ArtifactHolder without an artifact in its status")
			}

			handled := field(status, "LastHandledReconcileAt")
			_, requestable := iface.(meta.Requestable)
			if handled.IsValid() {
				if !requestable {
					t.Fatal("has status.lastHandledReconcileAt but is not meta.Requestable")
				}
				iface.(meta.Requestable).SetLastHandledReconcileRequest("now")
				if got := iface.(meta.Requestable).GetLastHandledReconcileRequest(); got != "now" || handled.String() != "now" {
					t.Errorf("GetLastHandledReconcileRequest() = %q, status holds %q, after setting %q", got, handled.String(), "now")
				}
			} else if requestable {
				t.Error("is meta.Requestable without status.lastHandledReconcileAt")
			}

			applied := field(status, "LastAppliedRevision")
			_, applier := iface.(meta.Applier)
			if applied.IsValid() {
				if !applier {
					t.Fatal("has status.lastAppliedRevision but is not meta.Applier")
				}
				applied.SetString("v1")
				if got := iface.(meta.Applier).GetLastAppliedRevision(); got != "v1" {
					t.Errorf("GetLastAppliedRevision() = %q with status.lastAppliedRevision v1", got)
				}
			} else if applier {
				t.Error("is meta.Applier without status.lastAppliedRevision")
			}
		})
	}
	if checked < 10 {
		t.Fatalf("checked %d kinds; the schemes register at least 10", checked)
	}
}

// field is v's field name, or the zero Value when v is not a struct or has
// no such field.
func field(v reflect.Value, name string) reflect.Value {
	if !v.IsValid() || v.Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return v.FieldByName(name)
}
