package deploytest

import (
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"

	"plumb.dev/pkg/imagebuild"
)

// TestDeploymentsRunTheImagesMakeImagesBuilds: each Deployment, the four
// controllers' and the ui component's, names the repository `make images`
// pushes its program to (<registry>/<program>), leaves the command to the
// image's entrypoint (the program; the Deployments give only args), and
// runs as the user the image is made for (pkg/imagebuild).
func TestDeploymentsRunTheImagesMakeImagesBuilds(t *testing.T) {
	objs := buildBase(t)
	ui, err := build(filepath.Join("testdata", "ui"))
	if err != nil {
		t.Fatal(err)
	}
	objs = append(objs, ui...)
	for _, program := range append(append([]string(nil), controllers...), "ui") {
		t.Run(program, func(t *testing.T) {
			g := NewWithT(t)
			u := find(objs, "Deployment", program)
			g.Expect(u).NotTo(BeNil())
			pod := typed[appsv1.Deployment](t, u).Spec.Template.Spec
			g.Expect(pod.Containers).To(HaveLen(1))
			c := pod.Containers[0]
			ref, err := name.ParseReference(c.Image)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ref.Context().RepositoryStr()).To(Equal("plumb-dev/"+program), c.Image)
			g.Expect(c.Command).To(BeEmpty(), "the image's entrypoint is the program")
			g.Expect(pod.SecurityContext).NotTo(BeNil())
			g.Expect(pod.SecurityContext.RunAsUser).To(HaveValue(BeEquivalentTo(imagebuild.NonrootUID)))
			g.Expect(pod.SecurityContext.RunAsGroup).To(HaveValue(BeEquivalentTo(imagebuild.NonrootUID)))
		})
	}
}
