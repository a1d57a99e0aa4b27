package localenv

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The kubelet's identity, as a cluster's bootstrap gives a node: user
// system:node:<name> in group system:nodes, a client certificate issued by
// the CA the API server trusts for clients (envtest's, the admin's too).
// With the Node authorizer and the NodeRestriction admission plugin on
// (configureInCluster), that identity reads only the Secrets, ConfigMaps,
// volumes and ServiceAccount tokens of the Pods bound to its Node and
// writes only its own Node and those Pods' status: a kubelet's credentials
// taken from the node do not open the cluster's Secrets, as the admin
// kubeconfig it used before did.
const (
	NodeUser  = "system:node:" + NodeName
	NodeGroup = "system:nodes"
)

// writeNodeKubeconfig issues the node's client certificate and writes a
// kubeconfig with it into the node's folder, for the kubelet.
func (e *Env) writeNodeKubeconfig() (string, error) {
	user, err := e.control.ControlPlane.AddUser(envtest.User{Name: NodeUser, Groups: []string{NodeGroup}}, nil)
	if err != nil {
		return "", fmt.Errorf("the node's client certificate: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(e.Node.Dir, "kubelet.kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", err
	}
	return path, nil
}
