package renderworker

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/helmpackage"
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

// FuzzChartRequests reads arbitrary bytes as a worker reads chart plan
// and package requests: no panic, and a request is taken only when the
// lengths its header gives cut its blob into the chart's archive and the
// dependencies' exactly, each part within the blob.
func FuzzChartRequests(f *testing.F) {
	dep := helmpackage.Dependency{Name: "common", Repository: "https://charts.example/stable", Version: "^3"}
	var seed bytes.Buffer
	for _, req := range []struct {
		r    *request
		blob []byte
	}{
		{&request{ChartPlan: &chartPlanRequest{Source: chartSource{Root: "/src", Dir: "/src/charts/app"}}, Timeout: time.Second}, nil},
		{&request{ChartPlan: &chartPlanRequest{Source: chartSource{ArchiveBytes: 3, Name: "app"}}, Timeout: time.Second}, []byte("tgz")},
		{&request{ChartPackage: &chartPackageRequest{Source: chartSource{ArchiveBytes: 3}, OutDir: "/tmp/x", Version: "1.0.0",
			ValuesFiles: []string{"values.yaml"}, Remote: []remoteArchive{{Dependency: dep, Bytes: 2}}}, Timeout: time.Second}, []byte("tgzab")},
		{&request{ChartPackage: &chartPackageRequest{Source: chartSource{ArchiveBytes: -1}, Remote: []remoteArchive{{Dependency: dep, Bytes: 9}}}}, []byte("x")},
		{&request{ChartPlan: &chartPlanRequest{}, ChartPackage: &chartPackageRequest{}}, nil},
	} {
		seed.Reset()
		_ = writeMessage(&seed, req.r, req.blob)
		f.Add(seed.Bytes())
	}
	seed.Reset()
	_ = writeMessage(&seed, &response{ChartName: "app", ChartVersion: "1.0.0", Remote: []helmpackage.Dependency{dep},
		Digest: "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}, nil)
	f.Add(seed.Bytes())

	f.Fuzz(func(t *testing.T, data []byte) {
		var req request
		blob, err := readMessage(bufio.NewReader(bytes.NewReader(data)), &req, 1<<20)
		if err != nil {
			return
		}
		_ = kinds(&req)
		if req.ChartPlan != nil {
			src, err := req.ChartPlan.inputs(blob)
			if err == nil && int64(len(src.Archive)) != req.ChartPlan.Source.ArchiveBytes && src.Archive != nil {
				t.Fatalf("an archive of %d bytes from a header of %d", len(src.Archive), req.ChartPlan.Source.ArchiveBytes)
			}
			if err == nil && req.ChartPlan.Source.ArchiveBytes != int64(len(blob)) {
				t.Fatalf("a plan took a blob of %d bytes for an archive of %d", len(blob), req.ChartPlan.Source.ArchiveBytes)
			}
		}
		if r := req.ChartPackage; r != nil {
			src, remote, err := r.inputs(blob)
			if err != nil {
				return
			}
			total := int64(len(src.Archive))
			for _, a := range remote {
				total += int64(len(a))
			}
			// Two entries of the same dependency keep the last; every
			// length was within the blob and they added up to it.
			sum := r.Source.ArchiveBytes
			for _, a := range r.Remote {
				sum += a.Bytes
			}
			if sum != int64(len(blob)) || total > sum {
				t.Fatalf("lengths adding up to %d took a blob of %d (%d kept)", sum, len(blob), total)
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
