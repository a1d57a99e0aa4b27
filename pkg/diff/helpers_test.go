package diff

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// obj decodes one YAML document the way the API machinery does (numbers as
// int64); an empty string gives nil.
func obj(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	if doc == "" {
		return nil
	}
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatalf("yaml: %v\n%s", err, doc)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatalf("decode: %v\n%s", err, doc)
	}
	return u
}

func file(t testing.TB, name string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return obj(t, string(b))
}
