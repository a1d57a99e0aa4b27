package render

import (
	"fmt"
	"testing"

	"sigs.k8s.io/kustomize/api/resource"

	"plumb.dev/pkg/object"
)

// TestFinishAllIsTheLoop holds finishAll on several workers to the loop
// on one: the objects in order, the error of the first object that
// fails whatever fails after it, and a panic carried to the caller only
// when the loop would have reached its object.
func TestFinishAllIsTheLoop(t *testing.T) {
	const n = 1000
	resources := make([]*resource.Resource, n)
	index := make(map[*resource.Resource]int, n)
	for i := range resources {
		resources[i] = &resource.Resource{}
		index[resources[i]] = i
	}
	type outcome struct {
		fail, panic bool
	}
	run := func(workers int, outcomes map[int]outcome) (objs []rendered, panicked any, err error) {
		defer func() { panicked = recover() }()
		objs, err = finishAll(resources, workers, func(r *resource.Resource) (rendered, error) {
			i := index[r]
			switch o := outcomes[i]; {
			case o.panic:
				panic(fmt.Sprintf("object %d", i))
			case o.fail:
				return rendered{}, fmt.Errorf("object %d", i)
			}
			return rendered{id: object.ID{Kind: "ConfigMap", Name: fmt.Sprint(i)}, yaml: fmt.Sprint(i)}, nil
		})
		return objs, nil, err
	}
	cases := map[string]map[int]outcome{
		"all printed":                          nil,
		"one fails":                            {517: {fail: true}},
		"the first of several fails":           {40: {fail: true}, 41: {fail: true}, 900: {fail: true}, 3: {fail: true}},
		"a panic after a failure":              {100: {fail: true}, 800: {panic: true}, 101: {panic: true}},
		"a panic before a failure":             {99: {panic: true}, 100: {fail: true}},
		"the last one fails, in a short batch": {n - 1: {fail: true}},
	}
	for name, outcomes := range cases {
		t.Run(name, func(t *testing.T) {
			wantObjs, wantPanic, wantErr := run(1, outcomes)
			for _, workers := range []int{2, 3, 8} {
				for range 20 {
					objs, p, err := run(workers, outcomes)
					if fmt.Sprint(err) != fmt.Sprint(wantErr) || p != wantPanic {
						t.Fatalf("%d workers: error %v, panic %v; the loop's: %v, %v", workers, err, p, wantErr, wantPanic)
					}
					if len(objs) != len(wantObjs) {
						t.Fatalf("%d workers: %d objects, the loop's %d", workers, len(objs), len(wantObjs))
					}
					for i := range objs {
						if objs[i] != wantObjs[i] {
							t.Fatalf("%d workers: object %d is %v, the loop's %v", workers, i, objs[i], wantObjs[i])
						}
					}
				}
			}
			if outcomes == nil && (len(wantObjs) != n || wantObjs[n-1].yaml != fmt.Sprint(n-1)) {
				t.Fatalf("the loop printed %d objects", len(wantObjs))
			}
			if outcomes != nil && wantErr == nil && wantPanic == nil {
				t.Fatal("the case makes no object fail")
			}
		})
	}
}
