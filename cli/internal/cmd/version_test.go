package cmd

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"

	"plumb.dev/pkg/version"
)

func TestVersionReadsTheControllersImages(t *testing.T) {
	ctx, system := newNamespace(t)
	g := NewWithT(t)
	oldV, oldC := version.Version, version.Commit
	t.Cleanup(func() { version.Version, version.Commit = oldV, oldC })
	version.Version, version.Commit = "v0.4.0", "0123456789abcdef"

	images := map[string]string{
		"source-controller":       "ghcr.io/plumb-dev/source-controller:v0.4.0",
		"sync-controller":         "localhost:5000/plumb/sync-controller@sha256:" + sha,
		"notification-controller": "notification-controller",
	}
	for name, image := range images {
		d := controllerDeployment(system, name, nil)
		d.Labels[partOfLabel] = partOfValue
		d.Spec.Template.Spec.Containers[0].Image = image
		create(ctx, t, d)
	}
	// Not Plumb's: no part-of label.
	other := controllerDeployment(system, "other", nil)
	other.Spec.Template.Spec.Containers[0].Image = "example.com/other:v9"
	create(ctx, t, other)

	r := plumb("version", "-n", system)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(lines(r.out)).To(Equal([]string{
		"plumb: v0.4.0",
		"commit: 0123456789abcdef",
		"notification-controller: latest",
		"source-controller: v0.4.0",
		"sync-controller: sha256:" + sha,
	}))

	r = plumb("version", "-n", system, "-o", "json")
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	var got map[string]string
	g.Expect(json.Unmarshal([]byte(r.out), &got)).To(Succeed(), r.out)
	g.Expect(got).To(Equal(map[string]string{
		"plumb": "v0.4.0", "commit": "0123456789abcdef",
		"notification-controller": "latest", "source-controller": "v0.4.0", "sync-controller": "sha256:" + sha,
	}))

	// --client reads no cluster: a kubeconfig that names none is fine.
	var out, errOut syncBuffer
	code := Run(ctx, []string{"--kubeconfig", "/nonexistent", "version", "--client"}, &out, &errOut)
	g.Expect(code).To(Equal(ExitOK), errOut.String())
	g.Expect(lines(out.String())).To(Equal([]string{"plumb: v0.4.0", "commit: 0123456789abcdef"}))

	_, empty := newNamespace(t)
	r = plumb("version", "-n", empty)
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring("no Deployments labelled app.kubernetes.io/part-of=plumb in namespace " + empty))
	g.Expect(plumb("version", "-o", "table").errOut).To(ContainSubstring(`-o must be yaml or json, not "table"`))
}

const sha = "5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef"

func TestImageVersion(t *testing.T) {
	for image, want := range map[string][2]string{
		"ghcr.io/plumb-dev/source-controller:v1.2.3":             {"source-controller", "v1.2.3"},
		"localhost:5000/sync-controller":                         {"sync-controller", "latest"},
		"localhost:5000/a/b:v1@sha256:" + sha:                    {"b", "v1"},
		"registry.example.com/x/render-controller@sha256:" + sha: {"render-controller", "sha256:" + sha},
		"ui": {"ui", "latest"},
	} {
		name, v := imageVersion(image)
		if name != want[0] || v != want[1] {
			t.Errorf("imageVersion(%q) = %q, %q; want %q, %q", image, name, v, want[0], want[1])
		}
	}
}
