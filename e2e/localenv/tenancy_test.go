package localenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// TestTenancyArgsAreDeploys: the tenancy flags the e2e tests and
// plumb-local run with are those of deploy/'s Deployments, no more and no
// fewer.
func TestTenancyArgsAreDeploys(t *testing.T) {
	g := NewWithT(t)
	root, err := RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	tenancy := TenancyArgs()
	for _, name := range ControllerNames {
		data, err := os.ReadFile(filepath.Join(root, "deploy", name, "deployment.yaml"))
		g.Expect(err).NotTo(HaveOccurred())
		d := &appsv1.Deployment{}
		g.Expect(yaml.Unmarshal(data, d)).To(Succeed())
		var deployed []string
		for _, a := range d.Spec.Template.Spec.Containers[0].Args {
			if strings.HasPrefix(a, "--no-cross-namespace-refs") || strings.HasPrefix(a, "--default-service-account") {
				deployed = append(deployed, a)
			}
		}
		g.Expect(tenancy[name]).To(ConsistOf(deployed), name)
	}
}
