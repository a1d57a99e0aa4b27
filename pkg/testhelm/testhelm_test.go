package testhelm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/getter"
	"helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"

	"plumb.dev/pkg/testhelm"
)

var podinfo = testhelm.Chart{Name: "podinfo", Version: "1.0.0", Files: testhelm.Files{
	"values.yaml":       "replicas: 1\n",
	"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
}}

func TestPackageIsDeterministic(t *testing.T) {
	a, err := testhelm.Package(podinfo)
	if err != nil {
		t.Fatal(err)
	}
	b, err := testhelm.Package(podinfo)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two packages of the same chart differ")
	}
	ch, err := loader.LoadArchive(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Name() != "podinfo" || ch.Metadata.Version != "1.0.0" || len(ch.Templates) != 1 {
		t.Fatalf("unexpected chart %+v", ch.Metadata)
	}
}

func TestPackageDir(t *testing.T) {
	dir := t.TempDir()
	files, err := testhelm.ChartFiles(podinfo, "podinfo")
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fromDir, err := testhelm.PackageDir(filepath.Join(dir, "podinfo"))
	if err != nil {
		t.Fatal(err)
	}
	direct, err := testhelm.Package(podinfo)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fromDir, direct) {
		t.Fatal("a chart packaged from its folder differs from the same chart packaged directly")
	}
}

func TestRepoServesAnSDKIndexOverTLSWithAuth(t *testing.T) {
	r, err := testhelm.NewRepo(testhelm.RepoOptions{Username: "u", Password: "p", TLS: true, ClientAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, v := range []string{"1.0.0", "1.1.0"} {
		c := podinfo
		c.Version = v
		if err := r.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	cert, key := r.ClientCert()
	for name, b := range map[string][]byte{"ca.crt": r.CA(), "tls.crt": cert, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g, err := getter.NewHTTPGetter(getter.WithURL(r.URL()), getter.WithBasicAuth("u", "p"),
		getter.WithTLSClientConfig(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")))
	if err != nil {
		t.Fatal(err)
	}
	buf, err := g.Get(r.URL() + "/index.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "index.yaml")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	index, err := repo.LoadIndexFile(p)
	if err != nil {
		t.Fatal(err)
	}
	cv, err := index.Get("podinfo", "~1.0")
	if err != nil || cv.Version != "1.0.0" {
		t.Fatalf("~1.0 resolved to %v, %v", cv, err)
	}
	if cv.URLs[0] != "podinfo-1.0.0.tgz" {
		t.Fatalf("chart URL %q", cv.URLs[0])
	}
	tgz, err := g.Get(r.URL() + "/" + cv.URLs[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loader.LoadArchive(tgz); err != nil {
		t.Fatal(err)
	}

	anonymous, err := getter.NewHTTPGetter(getter.WithURL(r.URL()),
		getter.WithTLSClientConfig(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anonymous.Get(r.URL() + "/index.yaml"); err == nil {
		t.Fatal("the index was served without credentials")
	}
}

func TestRegistryPushAndPull(t *testing.T) {
	reg, err := testhelm.NewRegistry(testhelm.RegistryOptions{Username: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	for _, v := range []string{"1.0.0", "1.2.0", "2.0.0"} {
		c := podinfo
		c.Version = v
		if _, err := reg.Push(c); err != nil {
			t.Fatal(err)
		}
	}
	client, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptBasicAuth("u", "p"),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")))
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.Host() + "/charts/podinfo"
	tags, err := client.Tags(ref)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := registry.GetTagMatchingVersionOrConstraint(tags, "^1")
	if err != nil || tag != "1.2.0" {
		t.Fatalf("^1 resolved to %q, %v (tags %v)", tag, err, tags)
	}
	res, err := client.Pull(ref + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(res.Chart.Data))
	if err != nil || ch.Metadata.Version != "1.2.0" {
		t.Fatalf("pulled %v, %v", ch, err)
	}

	anonymous, err := registry.NewClient(registry.ClientOptPlainHTTP(),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anonymous.Tags(ref); err == nil {
		t.Fatal("tags were listed without credentials")
	}
}

func TestRepoRemoveAndMetadata(t *testing.T) {
	r, err := testhelm.NewRepo(testhelm.RepoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, v := range []string{"1.0.0", "2.0.0"} {
		c := podinfo
		c.Version = v
		if err := r.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	if md := r.Metadata("podinfo", "2.0.0"); md == nil || md.Version != "2.0.0" {
		t.Fatalf("metadata of 2.0.0: %v", md)
	}
	r.Remove("podinfo", "2.0.0")
	if md := r.Metadata("podinfo", "2.0.0"); md != nil && md.Version == "2.0.0" {
		t.Fatal("2.0.0 is still in the index")
	}
	b, err := r.Index()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("podinfo-1.0.0.tgz")) || bytes.Contains(b, []byte("podinfo-2.0.0.tgz")) {
		t.Fatalf("index after Remove:\n%s", b)
	}
}

// A chart folder packaged at another version and pushed under a
// repository path of the test's choosing is pulled from that path at
// that version.
func TestPackageDirVersionPushedToAPath(t *testing.T) {
	dir := t.TempDir()
	if err := testhelm.WriteCharts(dir, map[string]testhelm.Chart{"podinfo": podinfo}); err != nil {
		t.Fatal(err)
	}
	tgz, err := testhelm.PackageDirVersion(filepath.Join(dir, "podinfo"), "1.1.0-rc.1")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := testhelm.NewRegistry(testhelm.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	ref, err := reg.PushArchiveTo(tgz, "stefanprodan/charts")
	if want := reg.Host() + "/stefanprodan/charts/podinfo:1.1.0-rc.1"; err != nil || ref != want {
		t.Fatalf("pushed to %q, %v; want %q", ref, err, want)
	}
	client, err := registry.NewClient(registry.ClientOptPlainHTTP(),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")))
	if err != nil {
		t.Fatal(err)
	}
	res, err := client.Pull(ref)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(res.Chart.Data))
	if err != nil || ch.Name() != "podinfo" || ch.Metadata.Version != "1.1.0-rc.1" || len(ch.Templates) != 1 {
		t.Fatalf("pulled %v, %v", ch, err)
	}
}
