package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/pkg/benchfig"
	"plumb.dev/pkg/manage"
)

// BenchmarkApplyPath applies 1,000 mixed objects (sync-controller's
// bench's mixed workload) to a fresh namespace in each of several ways,
// the ways rotating from one iteration to the next, and reports for each
// the wall time, the CPU of the API server and etcd, and the CPU of this
// process: where the engine's applies cost more than a bare loop's
// (docs/bench/sync.md, "Issue 46, items 3–4").
//
//   - bare: the bench's bare loop, client.Apply of each object with
//     labels no informer selects, 16 workers;
//   - bare-watched: the same, the objects labelled as a Kustomization's,
//     which the engine's watcher's informers select, so the API server
//     sends each on a metadata watch;
//   - bare-metadata-answer: the same apply as bare, the answer asked for
//     as PartialObjectMetadata (protobuf);
//   - engine: Prepare and ApplySet kind group by kind group, as a wave;
//   - engine-not-waited-on: the same for a wave whose health nothing
//     waits on (Options.NotWaitedOn), every answer metadata.
func BenchmarkApplyPath(b *testing.B) {
	e := newEnvEngine(b, nil)
	ctx := context.Background()
	const n = 1000
	// The watcher watches the kinds before the first run, as a controller
	// that synced once does.
	for _, o := range mixedObjects("default", 3) {
		if err := e.watcher.Watch(ctx, o.GroupVersionKind()); err != nil {
			b.Fatal(err)
		}
	}
	ways := []string{"bare", "bare-watched", "bare-metadata-answer", "engine", "engine-not-waited-on"}
	wall, server, self := map[string]time.Duration{}, map[string]time.Duration{}, map[string]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		for j := range ways {
			way := ways[(i+j)%len(ways)]
			ns, err := e.env.Namespace(ctx, "apply-path")
			if err != nil {
				b.Fatal(err)
			}
			objs := mixedObjects(ns, n)
			owner := manage.Owner{Namespace: ns, Name: "app"}
			if !strings.HasPrefix(way, "engine") {
				for _, o := range objs {
					labels := o.GetLabels()
					if way == "bare-watched" {
						labels["kustomize.plumb.dev/name"], labels["kustomize.plumb.dev/namespace"] = "app", ns
					} else {
						labels["bench.plumb.dev/name"], labels["bench.plumb.dev/namespace"] = "app", ns
					}
					o.SetLabels(labels)
					o.SetAnnotations(map[string]string{"bench.plumb.dev/hashed": "sha256:" + strings.Repeat("0", 64)})
				}
				objs = flatten(kindGroups(objs))
			}
			quiet()
			server0, self0 := childrenCPU(b), selfCPU(b)
			start := time.Now()
			switch way {
			case "engine":
				e.applyAll(b, objs, owner)
			case "engine-not-waited-on":
				e.applyAllWith(b, objs, Options{Owner: owner, NotWaitedOn: true})
			default:
				bareApply(b, e.client, objs, way == "bare-metadata-answer")
			}
			wall[way] += time.Since(start)
			// What the writes set off (watch events, etcd's work) ends a
			// moment later.
			time.Sleep(500 * time.Millisecond)
			server[way] += childrenCPU(b) - server0
			self[way] += selfCPU(b) - self0
		}
	}
	b.StopTimer()
	for _, way := range ways {
		b.ReportMetric(wall[way].Seconds()/float64(b.N), way+"-wall-s/op")
		b.ReportMetric(server[way].Seconds()/float64(b.N), way+"-server-cpu-s/op")
		b.ReportMetric(self[way].Seconds()/float64(b.N), way+"-self-cpu-s/op")
	}
}

func flatten(groups [][]*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// bareApply server-side-applies every object as the bench's bare loop does
// (force, its own field manager, 16 workers), the answer decoded whole or,
// with metadataAnswer, as PartialObjectMetadata.
func bareApply(b *testing.B, c client.Client, objs []*unstructured.Unstructured, metadataAnswer bool) {
	ctx := context.Background()
	var workers errgroup.Group
	workers.SetLimit(16)
	for _, o := range objs {
		workers.Go(func() error {
			obj := o.DeepCopy()
			if !metadataAnswer {
				return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("bench-bare"), client.ForceOwnership)
			}
			body, err := obj.MarshalJSON()
			if err != nil {
				return err
			}
			answer := &metav1.PartialObjectMetadata{}
			answer.SetGroupVersionKind(obj.GroupVersionKind())
			answer.SetNamespace(obj.GetNamespace())
			answer.SetName(obj.GetName())
			return c.Patch(ctx, answer, client.RawPatch(types.ApplyPatchType, body), client.FieldOwner("bench-bare"), client.ForceOwnership)
		})
	}
	if err := workers.Wait(); err != nil {
		b.Fatal(err)
	}
}

// quiet waits, at most 10 s, until the API server and etcd use less than a
// tenth of a core over 250 ms, so that a run does not pay for the last.
func quiet() {
	for range 40 {
		c0 := childrenCPUOrZero()
		time.Sleep(250 * time.Millisecond)
		if childrenCPUOrZero()-c0 < 25*time.Millisecond {
			return
		}
	}
}

func childrenCPU(b *testing.B) time.Duration {
	d, err := benchfig.ChildrenCPU()
	if err != nil {
		b.Fatal(err)
	}
	return d
}

func childrenCPUOrZero() time.Duration {
	d, _ := benchfig.ChildrenCPU()
	return d
}

func selfCPU(b *testing.B) time.Duration {
	d, err := benchfig.SelfCPU()
	if err != nil {
		b.Fatal(err)
	}
	return d
}
