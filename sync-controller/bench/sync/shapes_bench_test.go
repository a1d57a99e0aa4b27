package main

import (
	"context"
	"os"
	"testing"
)

// BenchmarkShapeRender renders each shape's tree of 1,000 mixed objects as
// the bench does inside its clock (shape.render), outside the bench's
// process: what pkg/render itself costs on the bench's objects, to set
// beside the render time bench-sync prints.
func BenchmarkShapeRender(b *testing.B) {
	const objects, ns = 1000, "bench-render"
	for _, s := range allShapes {
		b.Run(string(s), func(b *testing.B) {
			work, err := s.writeTree(mixed, ns, objects)
			defer os.RemoveAll(work)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := s.render(context.Background(), ns, objects, work); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
