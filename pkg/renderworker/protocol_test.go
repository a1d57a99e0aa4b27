package renderworker

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"reflect"
	"testing"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/helmrender"
	"plumb.dev/pkg/render"
)

// TestEveryHelmOptionReachesTheWorker sends helmrender.Options with every
// field set across the process boundary's encoding and reads back the
// same options: a new option that did not survive the trip would render
// differently in a worker than in process.
func TestEveryHelmOptionReachesTheWorker(t *testing.T) {
	opts := helmrender.Options{
		ReleaseName: "web",
		Namespace:   "apps",
		// JSON numbers decode as float64, as helmrender.Render reads them.
		Values:       map[string]any{"replicas": float64(2), "image": map[string]any{"tag": "1.2.3"}},
		Capabilities: helmrender.Capabilities{KubeVersion: "v1.37.2", APIVersions: []string{"apps/v1", "apps/v1/Deployment"}},
		IsInstall:    true,
		Revision:     4,
		CRDs:         helmv2.CRDsCreateReplace,
		PostRenderers: []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{
			Images: []kustomizev1.Image{{Name: "web", NewTag: "1.2.4"}},
		}}},
		CommonMetadata:          &kustomizev1.CommonMetadata{Labels: map[string]string{"team": "a"}},
		Record:                  true,
		DisableSchemaValidation: true,
	}
	fillInt64s(t, reflect.ValueOf(&opts.Limits).Elem())
	v := reflect.ValueOf(opts)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("helmrender.Options.%s is not set in this test: set it, so the test covers it", v.Type().Field(i).Name)
		}
	}

	var wire bytes.Buffer
	if err := writeMessage(&wire, &request{Helm: &opts}, []byte("archive")); err != nil {
		t.Fatal(err)
	}
	var got request
	blob, err := readMessage(&wire, &got, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if got.Helm == nil || !reflect.DeepEqual(*got.Helm, opts) {
		t.Errorf("the worker reads\n%+v\nwant\n%+v", got.Helm, opts)
	}
	if string(blob) != "archive" {
		t.Errorf("blob %q, want the archive", blob)
	}
}

// fillInt64s gives every int64 field of a struct of them a distinct value.
func fillInt64s(t *testing.T, s reflect.Value) {
	t.Helper()
	for i := range s.NumField() {
		f := s.Field(i)
		if f.Kind() != reflect.Int64 {
			t.Fatalf("%s.%s is a %s: fill it by hand", s.Type(), s.Type().Field(i).Name, f.Kind())
		}
		f.SetInt(int64(1000 + i))
	}
}

// TestEveryKustomizeOptionReachesTheBuild sends KustomizeOptions with
// every field set across the process boundary's encoding, then makes the
// worker's render.Options of them: every field of render.Options must be
// set, from the option of the same name (or the one that carries it), so
// that a render.Options field added without a way to the worker, or an
// option the encoding drops, fails here rather than renders differently
// in a worker than in process.
func TestEveryKustomizeOptionReachesTheBuild(t *testing.T) {
	// The option that carries each render.Options field that is not a
	// value on the wire.
	carriedBy := map[string]string{"Decryptor": "Decryption", "Shared": "Share"}
	shared := render.NewSharedBuilds(1 << 20)
	// Decryption and Share exclude each other: one trip for each.
	decrypting := KustomizeOptions{
		Vars:               render.Variables{"region": {Value: "eu"}, "token": {Value: "x", Secret: true}},
		StrictSubstitution: true,
		Decryption:         &Decryption{Secret: "apps/sops-keys"},
	}
	fillInt64s(t, reflect.ValueOf(&decrypting.Limits).Elem())
	sharing := decrypting
	sharing.Decryption, sharing.Share = nil, true
	for _, o := range []KustomizeOptions{decrypting, sharing} {
		v := reflect.ValueOf(o)
		for i := range v.NumField() {
			name := v.Type().Field(i).Name
			if v.Field(i).IsZero() && name != "Decryption" && name != "Share" {
				t.Fatalf("KustomizeOptions.%s is not set in this test: set it, so the test covers it", name)
			}
		}
	}

	set := map[string]bool{}
	for _, sent := range []KustomizeOptions{decrypting, sharing} {
		var wire bytes.Buffer
		if err := writeMessage(&wire, &request{Kustomize: &kustomizeRequest{WorkDir: "/work", KustomizeOptions: sent}}, nil); err != nil {
			t.Fatal(err)
		}
		var got request
		if _, err := readMessage(&wire, &got, 1<<20); err != nil {
			t.Fatal(err)
		}
		if got.Kustomize == nil || !reflect.DeepEqual(got.Kustomize.KustomizeOptions, sent) {
			t.Fatalf("the worker reads\n%+v\nwant\n%+v", got.Kustomize, sent)
		}
		opts, err := got.Kustomize.renderOptions(shared)
		if err != nil {
			t.Fatal(err)
		}
		ov, sv := reflect.ValueOf(opts), reflect.ValueOf(sent)
		for i := range ov.NumField() {
			name := ov.Type().Field(i).Name
			if !ov.Field(i).IsZero() {
				set[name] = true
			}
			if carrier := carriedBy[name]; carrier != "" {
				if sv.FieldByName(carrier).IsZero() != ov.Field(i).IsZero() {
					t.Errorf("render.Options.%s is %v with KustomizeOptions.%s %v", name, ov.Field(i), carrier, sv.FieldByName(carrier))
				}
				continue
			}
			from := sv.FieldByName(name)
			if !from.IsValid() {
				t.Errorf("render.Options.%s has no KustomizeOptions field to come from: add one, and set it in renderOptions", name)
				continue
			}
			if !reflect.DeepEqual(ov.Field(i).Interface(), from.Interface()) {
				t.Errorf("render.Options.%s is %v, want %v", name, ov.Field(i), from)
			}
		}
	}
	for i := range reflect.TypeFor[render.Options]().NumField() {
		if name := reflect.TypeFor[render.Options]().Field(i).Name; !set[name] {
			t.Errorf("render.Options.%s is never set in the worker: carry it in KustomizeOptions", name)
		}
	}
	if opts, _ := sharing.renderOptions(shared); opts.Shared != shared {
		t.Errorf("a sharing build uses %p, not the worker's shared builds %p", opts.Shared, shared)
	}
}

// writeFrame writes one frame of the parts as the protocol frames them:
// a test's way to send what writeMessage never would.
func writeFrame(w io.Writer, parts ...[]byte) error {
	var size int
	for _, p := range parts {
		size += len(p)
	}
	if _, err := w.Write(binary.BigEndian.AppendUint32(nil, uint32(size))); err != nil {
		return err
	}
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// writeCounter keeps what is written and counts the writes.
type writeCounter struct {
	bytes.Buffer
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// TestASmallMessageIsOneWrite: a request or an answer with a blob of at
// most coalescedBlob goes to the pipe in one write, framed as two frames
// (the header's and the blob's, each after its length); a larger blob is
// written as its parts, not copied, and reads back the same.
func TestASmallMessageIsOneWrite(t *testing.T) {
	header := &response{Digest: "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}
	small := []byte("apiVersion: v1\nkind: ConfigMap\n")
	large := bytes.Repeat([]byte("x"), coalescedBlob)
	for _, tc := range []struct {
		name   string
		blob   [][]byte
		writes int
	}{
		{"no blob", nil, 1},
		{"a small blob", [][]byte{small}, 1},
		{"a small blob in two parts", [][]byte{small, small}, 1},
		{"a blob of the largest coalesced size", [][]byte{large[:coalescedBlob-len(small)], small}, 1},
		{"a larger blob in two parts", [][]byte{large, small}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w writeCounter
			if err := writeMessage(&w, header, tc.blob...); err != nil {
				t.Fatal(err)
			}
			if w.writes != tc.writes {
				t.Errorf("%d writes, want %d", w.writes, tc.writes)
			}
			// The bytes are the frames' as they always were.
			h, _ := json.Marshal(header)
			var want bytes.Buffer
			_ = writeFrame(&want, h)
			_ = writeFrame(&want, tc.blob...)
			if !bytes.Equal(w.Bytes(), want.Bytes()) {
				t.Errorf("the message's bytes differ from its two frames")
			}
			var got response
			blob, err := readMessage(&w.Buffer, &got, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if got.Digest != header.Digest || !bytes.Equal(blob, bytes.Join(tc.blob, nil)) {
				t.Errorf("read back %q and a blob of %d bytes", got.Digest, len(blob))
			}
		})
	}
}
