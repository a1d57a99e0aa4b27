package testenv

import (
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubeconfig returns a kubeconfig that reaches the API server as Config
// does (the administrator: a client certificate, or a token): cluster
// "envtest", user "admin", current context "envtest". A caller adjusts it
// (a namespace, impersonation) and saves it with clientcmd.WriteToFile.
func (e *Environment) Kubeconfig() *clientcmdapi.Config {
	cfg := e.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken,
	}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	return kc
}
