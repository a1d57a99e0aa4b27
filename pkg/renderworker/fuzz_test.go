package renderworker

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/helmrender"
	"plumb.dev/pkg/render"
)

// FuzzWorkerProtocol reads arbitrary bytes as a worker reads requests and
// as the parent reads answers: no panic, nothing read past its bounds, and
// an answer taken only when its manifests match their digest.
func FuzzWorkerProtocol(f *testing.F) {
	var seed bytes.Buffer
	_ = writeMessage(&seed, &request{Kustomize: &kustomizeRequest{WorkDir: "/w", Spec: kustomizev1.KustomizationSpec{Path: "app"}}, Timeout: time.Second}, nil)
	f.Add(seed.Bytes())
	seed.Reset()
	_ = writeMessage(&seed, &response{Digest: "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}, nil)
	f.Add(seed.Bytes())
	seed.Reset()
	_ = writeMessage(&seed, &response{Error: &responseError{Reason: "Evil", Message: "m"}}, []byte("x"))
	f.Add(seed.Bytes())
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 2, '{', '}', 0, 0, 0, 0})

	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReader(bytes.NewReader(data))
		for {
			var req request
			blob, err := readMessage(r, &req, 1<<20)
			if err != nil {
				break
			}
			if int64(len(blob)) > 1<<20 {
				t.Fatalf("a blob of %d bytes passed its bound", len(blob))
			}
		}
		r = bufio.NewReader(bytes.NewReader(data))
		var resp response
		manifests, err := readMessage(r, &resp, 1<<20)
		if err != nil {
			return
		}
		if err := checkAnswer(&resp, manifests); err != nil {
			return
		}
		if resp.Error != nil {
			e := resp.Error.err()
			if !knownReason(render.Reason(e)) {
				t.Fatalf("an answer's error crossed with reason %q", render.Reason(e))
			}
		}
	})
}

// FuzzHelmInAWorker renders arbitrary templates in workers: whatever the
// template does, the parent gets a result whose manifests match their
// digest or a *render.Error of a known reason, within the deadline.
func FuzzHelmInAWorker(f *testing.F) {
	for _, seed := range []string{
		configMapTemplate,
		doublingTemplate,
		`{{ range 2000000000 }}{{ end }}`,
		`{{ $m := dict }}{{ $_ := set $m "self" $m }}{{ printf "%v" $m }}`,
		`{{ fail "no" }}`,
		`{{ .Values.missing.deeper }}`,
		`{{ tpl (repeat 1000 "{{ .Release.Name }}") . }}`,
	} {
		f.Add(seed)
	}
	p := NewPool(Options{Workers: 1, Memory: 256 << 20})
	f.Cleanup(p.Close)
	f.Fuzz(func(t *testing.T, tmpl string) {
		archive, err := chartArchive(tmpl)
		if err != nil {
			t.Skip()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		res, err := p.Helm(ctx, archive, helmrender.Options{ReleaseName: "fuzz", Namespace: "fuzz"})
		if err != nil {
			var e *render.Error
			if !errors.As(err, &e) || !knownReason(e.Reason) {
				t.Fatalf("a failure that is not a render error of a known reason: %T %v", err, err)
			}
			return
		}
		if checkAnswer(&response{Digest: res.Digest}, res.Manifests) != nil {
			t.Fatal("manifests that do not match their digest")
		}
	})
}
