package events

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"
)

func TestSubject(t *testing.T) {
	for _, tc := range []struct {
		kind, namespace, name, want string
	}{
		{"GitRepository", "flux-system", "podinfo", "plumb.events.gitrepository.flux-system.podinfo"},
		{"Kustomization", "apps", "web.v2", "plumb.events.kustomization.apps.web_v2"},
		{"ClusterThing", "", "x", "plumb.events.clusterthing._.x"},
		{"Odd", "n s", "a*b>c", "plumb.events.odd.n_s.a_b_c"},
	} {
		NewWithT(t).Expect(Subject(tc.kind, tc.namespace, tc.name)).To(Equal(tc.want))
	}
}

func TestDecode(t *testing.T) {
	files, err := filepath.Glob("testdata/decode/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test data: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			g := NewWithT(t)
			data, err := os.ReadFile(file)
			g.Expect(err).NotTo(HaveOccurred())
			e, err := Decode(data)
			if strings.HasPrefix(filepath.Base(file), "bad-") {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(e.ID).NotTo(BeEmpty())
		})
	}
}

// FuzzDecode feeds the decoder arbitrary bytes, as anyone able to publish on
// the stream could: it never panics, and whatever it accepts is a valid event
// that survives encoding and decoding unchanged.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/decode/*.json")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"schemaVersion":"plumb.dev/event/v1.7","id":"x","involvedObject":{"kind":"K","name":"n"},"severity":"error"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := Decode(data)
		if err != nil {
			if e != nil {
				t.Fatalf("an error with an event: %v", err)
			}
			return
		}
		if e.ID == "" || e.InvolvedObject.Kind == "" || e.InvolvedObject.Name == "" {
			t.Fatalf("accepted an incomplete event: %+v", e)
		}
		if e.Severity != SeverityInfo && e.Severity != SeverityError {
			t.Fatalf("accepted severity %q", e.Severity)
		}
		if !utf8.ValidString(e.Subject()) || strings.Count(e.Subject(), ".") < 4 {
			t.Fatalf("bad subject %q", e.Subject())
		}
		again, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("re-encoding an accepted event: %v", err)
		}
		e2, err := Decode(again)
		if err != nil {
			t.Fatalf("decoding a re-encoded event: %v", err)
		}
		if e2.ID != e.ID || e2.Message != e.Message || e2.InvolvedObject != e.InvolvedObject || !e2.Timestamp.Equal(e.Timestamp) {
			t.Fatalf("round trip changed the event: %+v != %+v", e2, e)
		}
	})
}
