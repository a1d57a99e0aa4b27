package target

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// inline is a kubeconfig with its credentials inline, of a server on a
// private address.
func inline() *clientcmdapi.Config {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://10.0.0.1:6443", CertificateAuthorityData: []byte("ca")}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t0ken"}
	kc.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "x"
	return kc
}

// TestRemoteConfigAllowsOnlyInlineCredentials is the rule of remoteConfig
// for each way a kubeconfig can reach outside its own text.
func TestRemoteConfigAllowsOnlyInlineCredentials(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*clientcmdapi.Config)
		err    string
	}{
		{name: "inline token and CA", mutate: func(*clientcmdapi.Config) {}},
		{name: "exec plugin", err: `user "u": an exec plugin`, mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].Exec = &clientcmdapi.ExecConfig{Command: "aws", APIVersion: "client.authentication.k8s.io/v1"}
		}},
		{name: "auth provider", err: "auth-provider plugin", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "gcp"}
		}},
		{name: "token file", err: "tokenFile", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].TokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
		}},
		{name: "client certificate file", err: "client-certificate (a file path", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].ClientCertificate = "/etc/tls/tls.crt"
		}},
		{name: "client key file", err: "client-key (a file path", mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].ClientKey = "/etc/tls/tls.key"
		}},
		{name: "CA file", err: `cluster "c": certificate-authority (a file path)`, mutate: func(kc *clientcmdapi.Config) {
			kc.Clusters["c"].CertificateAuthority = "/etc/ssl/ca.crt"
		}},
		{name: "an unused user with a plugin", err: `user "spare": an exec plugin`, mutate: func(kc *clientcmdapi.Config) {
			kc.AuthInfos["spare"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "sh"}}
		}},
		{name: "TLS verification off", err: "insecure-skip-tls-verify", mutate: func(kc *clientcmdapi.Config) {
			kc.Clusters["c"].InsecureSkipTLSVerify = true
			kc.Clusters["c"].CertificateAuthorityData = nil
		}},
		{name: "plain http", err: "only an https:// URL", mutate: func(kc *clientcmdapi.Config) {
			kc.Clusters["c"].Server = "http://10.0.0.1:8080"
		}},
		{name: "a current context that is not there", err: "context was not found", mutate: func(kc *clientcmdapi.Config) { kc.CurrentContext = "missing" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			kc := inline()
			tt.mutate(kc)
			data, err := clientcmd.Write(*kc)
			g.Expect(err).NotTo(HaveOccurred())
			cfg, err := remoteConfig(data, (&Resolver{}).remoteServers(), noProxy)
			switch {
			case tt.err != "":
				g.Expect(err).To(MatchError(ContainSubstring(tt.err)))
			default:
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(cfg.Host).To(Equal("https://10.0.0.1:6443"))
				g.Expect(cfg.BearerToken).To(Equal("t0ken"))
				g.Expect(cfg.CAData).To(Equal([]byte("ca")))
				g.Expect(cfg.Timeout).To(Equal(remoteRequestTimeout))
				g.Expect(cfg.ExecProvider).To(BeNil())
			}
		})
	}
	_, err := remoteConfig([]byte(strings.Repeat("{", 10)), (&Resolver{}).remoteServers(), noProxy)
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("not a kubeconfig")))
}

// A remote cluster's requests take no proxy from the environment unless
// --remote-cluster-proxy-from-environment says so: client-go takes the
// environment's proxy when a config has none, and a proxy would connect
// where the address policy never looked.
func TestRemoteClustersIgnoreProxyEnvironmentUnlessTold(t *testing.T) {
	g := NewWithT(t)
	data, err := clientcmd.Write(*inline())
	g.Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequest(http.MethodGet, "https://10.0.0.1:6443/api", nil)
	g.Expect(err).NotTo(HaveOccurred())

	direct := &Resolver{}
	cfg, err := remoteConfig(data, direct.remoteServers(), direct.remoteProxy())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Proxy).NotTo(BeNil(), "a nil Proxy is client-go's ProxyFromEnvironment")
	u, err := cfg.Proxy(req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(u).To(BeNil())

	viaEnv := &Resolver{RemoteClusterProxyFromEnvironment: true}
	cfg, err = remoteConfig(data, viaEnv.remoteServers(), viaEnv.remoteProxy())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reflect.ValueOf(cfg.Proxy).Pointer()).To(Equal(reflect.ValueOf(http.ProxyFromEnvironment).Pointer()))
}
