package typedwatch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
	toolscache "k8s.io/client-go/tools/cache"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/testenv"
	"plumb.dev/pkg/typedwatch"
)

var lazyEnv = testenv.Lazy{Options: []testenv.Option{testenv.WithoutNATS()}}

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	lazyEnv.Stop()
	os.Exit(code)
}

var kustomizationGVK = kustomizev1.GroupVersion.WithKind("Kustomization")

// newNamespace makes a namespace of the test's own.
func newNamespace(ctx context.Context, t *testing.T, env *testenv.Environment, name string) {
	t.Helper()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// newKustomization is a Kustomization with most of what a fleet's has.
func newKustomization(ns, name string) *kustomizev1.Kustomization {
	return &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{"note": "ünïcode \u2028 and \"quotes\""}},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "fleet"},
			Path:      "./apps/" + name,
			Interval:  metav1.Duration{Duration: 10 * time.Minute},
			Prune:     true,
			PostBuild: &kustomizev1.PostBuild{Substitute: map[string]string{"replicas": "3", "name": name}},
		},
	}
}

// getJSON sends a GET of query under the Kustomizations' API group and
// version to the API server, asking for JSON, and fails the test unless
// the answer is 200 OK; the caller closes its body.
func getJSON(ctx context.Context, t *testing.T, cfg *rest.Config, query string) *http.Response {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/apis/kustomize.plumb.dev/v1/"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("GET %s: %s: %s", query, resp.Status, b)
	}
	return resp
}

// rawWatch opens a JSON watch of the Kustomizations of ns on the API
// server and returns the frames of its events until stop says the last
// one read is the last wanted.
func rawWatch(ctx context.Context, t *testing.T, cfg *rest.Config, query string, act func(), stop func(frame []byte) bool) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp := getJSON(ctx, t, cfg, query)
	defer resp.Body.Close()
	if act != nil {
		go act()
	}
	var out bytes.Buffer
	dec := json.NewDecoder(resp.Body)
	for {
		var frame json.RawMessage
		if err := dec.Decode(&frame); err != nil {
			t.Fatalf("reading the watch %s after %d bytes: %v", query, out.Len(), err)
		}
		out.Write(frame)
		out.WriteByte('\n')
		if stop(frame) {
			return out.Bytes()
		}
	}
}

func frameType(frame []byte) string {
	var ev struct{ Type string }
	_ = json.Unmarshal(frame, &ev)
	return ev.Type
}

// decodedEvent is what a watch decoder returns for one frame.
type decodedEvent struct {
	Type   watch.EventType
	Object runtime.Object
}

// decodeAll runs the frames through a watch decoder made as
// rest.Request.Watch makes it, from negotiator.
func decodeAll(t *testing.T, negotiator runtime.ClientNegotiator, frames []byte) []decodedEvent {
	t.Helper()
	return decodeAllCounting(t, negotiator, frames, nil)
}

// clientGoNegotiator is the negotiator of controller-runtime's typed
// clients and caches: the scheme's codecs without conversion.
func clientGoNegotiator(scheme *runtime.Scheme) runtime.ClientNegotiator {
	return runtime.NewClientNegotiator(serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(scheme)}, kustomizev1.GroupVersion)
}

// TestAWatchDecodesAsClientGoDecodesIt feeds the frames of real watches
// (the initial events and their bookmark, a create, status writes, an
// update, a delete, and the ERROR of a watch from an expired version)
// through client-go's decoder and this package's, and wants the same
// events and objects, the objects of every event but the ERROR decoded in
// one pass.
func TestAWatchDecodesAsClientGoDecodesIt(t *testing.T) {
	env := lazyEnv.Get(t)
	ctx := t.Context()
	ns := "watch-decode"
	newNamespace(ctx, t, env, ns)
	for _, name := range []string{"one", "two"} {
		if err := env.Client.Create(ctx, newKustomization(ns, name)); err != nil {
			t.Fatal(err)
		}
	}

	deleted := 0
	changes := func() {
		three := newKustomization(ns, "three")
		if err := env.Client.Create(ctx, three); err != nil {
			t.Error(err)
			return
		}
		testenv.SetStatus(ctx, t, env.Client, three, func(k *kustomizev1.Kustomization) {
			k.Status.ObservedGeneration = 1
			k.Status.LastAppliedRevision = "main@sha1:0123456789abcdef"
			k.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "ReconciliationSucceeded",
				Message: "Applied revision: main@sha1:0123456789abcdef", LastTransitionTime: metav1.Now(), ObservedGeneration: 1}}
		})
		three.Labels["team"] = "b"
		three.Spec.Suspend = true
		if err := env.Client.Update(ctx, three); err != nil {
			t.Error(err)
			return
		}
		if err := env.Client.Delete(ctx, three); err != nil {
			t.Error(err)
		}
	}
	frames := rawWatch(ctx, t, env.Config,
		"namespaces/"+ns+"/kustomizations?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
		changes, func(frame []byte) bool {
			if frameType(frame) == string(watch.Deleted) {
				deleted++
			}
			return deleted == 1
		})
	// A watch from a version long compacted out of the watch cache ends
	// with an ERROR event: 410 Gone.
	frames = append(frames, rawWatch(ctx, t, env.Config, "namespaces/"+ns+"/kustomizations?watch=true&resourceVersion=1", nil,
		func(frame []byte) bool { return frameType(frame) == string(watch.Error) })...)

	ours, err := typedwatch.NewClientNegotiator(env.Scheme, kustomizationGVK)
	if err != nil {
		t.Fatal(err)
	}
	want := decodeAll(t, clientGoNegotiator(env.Scheme), frames)
	onePass := 0
	got := decodeAllCounting(t, ours, frames, &onePass)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the events differ from client-go's (-client-go +one pass):\n%s", diff)
	}
	seen := map[watch.EventType]int{}
	for i, ev := range got {
		seen[ev.Type]++
		if reflect.TypeOf(ev.Object) != reflect.TypeOf(want[i].Object) {
			t.Errorf("event %d: %T, client-go's %T", i, ev.Object, want[i].Object)
		}
	}
	for _, typ := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error} {
		if seen[typ] == 0 {
			t.Errorf("no %s event in the watches (%v)", typ, seen)
		}
	}
	if status, ok := got[len(got)-1].Object.(*metav1.Status); !ok || !apierrors.IsResourceExpired(apierrors.FromObject(status)) && !apierrors.IsGone(apierrors.FromObject(status)) {
		t.Errorf("the last event is not a 410 Gone: %#v", got[len(got)-1].Object)
	}
	if want := len(got) - seen[watch.Error]; onePass != want {
		t.Errorf("%d events decoded in one pass, want %d (all but the ERROR)", onePass, want)
	}
}

// decodeAllCounting is decodeAll that counts, in onePass unless it is
// nil, the events whose object pairObjects handed over from the one pass.
func decodeAllCounting(t *testing.T, negotiator runtime.ClientNegotiator, frames []byte, onePass *int) []decodedEvent {
	t.Helper()
	objects, events, framer, err := negotiator.StreamDecoder(runtime.ContentTypeJSON, nil)
	if err != nil {
		t.Fatal(err)
	}
	frameReader := framer.NewFrameReader(io.NopCloser(bytes.NewReader(frames)))
	dec := restclientwatch.NewDecoder(streaming.NewDecoder(frameReader, events), objects)
	var out []decodedEvent
	for {
		typ, obj, err := dec.Decode()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("decoding event %d: %v", len(out), err)
		}
		if onePass != nil && typedwatch.HandedOver(objects) {
			*onePass++
		}
		out = append(out, decodedEvent{typ, obj})
	}
}

// TestAListDecodesAsClientGoDecodesIt decodes a real list of
// Kustomizations with client-go's decoder and this package's.
func TestAListDecodesAsClientGoDecodesIt(t *testing.T) {
	env := lazyEnv.Get(t)
	ctx := t.Context()
	ns := "list-decode"
	newNamespace(ctx, t, env, ns)
	for _, name := range []string{"one", "two", "three"} {
		k := newKustomization(ns, name)
		if err := env.Client.Create(ctx, k); err != nil {
			t.Fatal(err)
		}
		testenv.SetStatus(ctx, t, env.Client, k, func(k *kustomizev1.Kustomization) {
			k.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Progressing",
				Message: "building", LastTransitionTime: metav1.Now()}}
		})
	}
	resp := getJSON(ctx, t, env.Config, "namespaces/"+ns+"/kustomizations")
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("list: %v", err)
	}

	decode := func(n runtime.ClientNegotiator) *kustomizev1.KustomizationList {
		d, err := n.Decoder(runtime.ContentTypeJSON, nil)
		if err != nil {
			t.Fatal(err)
		}
		list := &kustomizev1.KustomizationList{}
		if err := runtime.DecodeInto(d, body, list); err != nil {
			t.Fatal(err)
		}
		return list
	}
	ours, err := typedwatch.NewClientNegotiator(env.Scheme, kustomizationGVK)
	if err != nil {
		t.Fatal(err)
	}
	want, got := decode(clientGoNegotiator(env.Scheme)), decode(ours)
	if len(want.Items) != 3 {
		t.Fatalf("client-go decoded %d Kustomizations, want 3", len(want.Items))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the list differs from client-go's (-client-go +one pass):\n%s", diff)
	}

	// An answer that is not the list (a Status) goes to client-go's decoder, its error with it.
	d, err := ours.Decoder(runtime.ContentTypeJSON, nil)
	if err != nil {
		t.Fatal(err)
	}
	status := []byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"gone","reason":"Expired","code":410}`)
	_, errOurs := runtime.Decode(d, status)
	cgd, _ := clientGoNegotiator(env.Scheme).Decoder(runtime.ContentTypeJSON, nil)
	_, errClientGo := runtime.Decode(cgd, status)
	if fmt.Sprint(errOurs) != fmt.Sprint(errClientGo) {
		t.Errorf("decoding a Status: %v, client-go: %v", errOurs, errClientGo)
	}
}

// listWatchOnly is a ListWatch that tells the reflector to list and then
// watch, instead of client-go's watch with initial events.
type listWatchOnly struct{ *toolscache.ListWatch }

func (listWatchOnly) IsWatchListSemanticsUnSupported() bool { return true }

// TestAnExpiredWatchRelists has an informer's watch start from a version
// the API server no longer has: the 410 Gone it answers, decoded by this
// package, makes client-go's reflector list again, and the informer then
// sees what changed.
func TestAnExpiredWatchRelists(t *testing.T) {
	env := lazyEnv.Get(t)
	ctx := t.Context()
	ns := "relist"
	newNamespace(ctx, t, env, ns)
	if err := env.Client.Create(ctx, newKustomization(ns, "before")); err != nil {
		t.Fatal(err)
	}
	lw, err := typedwatch.NewListWatch(env.Config, nil, env.Scheme, typedwatch.Kind{GVK: kustomizationGVK, Resource: "kustomizations", Selection: typedwatch.Selection{Namespace: ns}})
	if err != nil {
		t.Fatal(err)
	}
	var lists, watches atomic.Int32
	var expired atomic.Bool
	counted := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			lists.Add(1)
			return lw.ListWithContextFunc(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if watches.Add(1) == 1 {
				opts.ResourceVersion = "1" // long gone from the watch cache
			}
			w, err := lw.WatchFuncWithContext(ctx, opts)
			if err != nil && (apierrors.IsResourceExpired(err) || apierrors.IsGone(err)) {
				expired.Store(true)
			}
			return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
				if ev.Type == watch.Error && (apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) || apierrors.IsGone(apierrors.FromObject(ev.Object))) {
					expired.Store(true)
				}
				return ev, true
			}), err
		},
	}
	informer := toolscache.NewSharedIndexInformer(listWatchOnly{counted}, &kustomizev1.Kustomization{}, 0, toolscache.Indexers{})
	go informer.RunWithContext(ctx)
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !toolscache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	if err := env.Client.Create(ctx, newKustomization(ns, "after")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, exists, err := informer.GetStore().GetByKey(ns + "/after")
		if err != nil {
			t.Fatal(err)
		}
		if exists {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the informer never saw the Kustomization made after the expired watch (lists %d, watches %d, expired %v)", lists.Load(), watches.Load(), expired.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !expired.Load() {
		t.Fatal("the watch from version 1 did not answer 410 Gone")
	}
	if lists.Load() < 2 {
		t.Fatalf("%d lists: the reflector did not list again after the 410", lists.Load())
	}
	obj, _, err := informer.GetStore().GetByKey(ns + "/before")
	if err != nil || obj == nil {
		t.Fatalf("the Kustomization listed first is gone from the store: %v", err)
	}
	if k := obj.(*kustomizev1.Kustomization); k.Spec.Path != "./apps/before" {
		t.Errorf("the stored Kustomization's path: %q", k.Spec.Path)
	}
}
