package diff

import (
	"fmt"
	"testing"
)

func ExamplePointerOf() {
	fmt.Println(PointerOf("spec.replicas"))
	fmt.Println(PointerOf("spec.template.spec.containers[0].image"))
	fmt.Println(PointerOf(`metadata.labels["app.kubernetes.io/name"]`))
	// Output:
	// /spec/replicas
	// /spec/template/spec/containers/0/image
	// /metadata/labels/app.kubernetes.io~1name
}

func TestParsePathIsTheInverseOfDiffsPaths(t *testing.T) {
	got := ParsePath(`spec.containers[2]["a.b"].x`)
	want := []PathElement{{Key: "spec"}, {Key: "containers"}, {Index: 2, IsIndex: true}, {Key: "a.b"}, {Key: "x"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ParsePath = %v, want %v", got, want)
	}
}
