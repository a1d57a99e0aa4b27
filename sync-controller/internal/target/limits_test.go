package target

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// A remote API server's answers are bounded, a watch's in all: one event
// with newlines inside it (JSON allows them) is still one value to
// client-go's watch decoder, so no bound per line would hold.
func TestRemoteAnswersAreBounded(t *testing.T) {
	const limit = 1 << 10
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/exact":
			_, _ = io.WriteString(w, strings.Repeat("a", limit))
		case "/big":
			_, _ = io.WriteString(w, strings.Repeat("a", 4*limit))
		case "/watch": // small events, then one spread over many short lines
			_, _ = io.WriteString(w, "{}\n{}\n{\"data\":[\n"+strings.Repeat("\"c\",\n", limit)+"\"c\"]}\n")
		}
	}))
	defer srv.Close()
	client := &http.Client{Transport: boundRemoteResponses(limit)(http.DefaultTransport)}
	read := func(path string) (int, error) {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		return len(data), err
	}
	g := NewWithT(t)
	n, err := read("/exact")
	g.Expect(err).NotTo(HaveOccurred(), "an answer of exactly the bound")
	g.Expect(n).To(Equal(limit))
	_, err = read("/big")
	g.Expect(err).To(MatchError(ContainSubstring("the remote cluster's answer is larger than 1024 bytes")))
	_, err = read("/watch?watch=true")
	g.Expect(err).To(MatchError(ContainSubstring("the remote cluster's watch is larger than 1024 bytes")))
}

// A kubeconfig's server on the node's or the cloud's own addresses is
// refused before any connection; loopback only with
// --allow-loopback-kubeconfig-servers.
func TestKubeConfigServersOnRefusedAddresses(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`)
	}))
	defer srv.Close()
	kubeconfig := func(server string) []byte {
		kc := clientcmdapi.NewConfig()
		kc.Clusters["c"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: certPEM(t, srv)}
		kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t0ken"}
		kc.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
		kc.CurrentContext = "x"
		data, err := clientcmd.Write(*kc)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	groups := func(r *Resolver, server string) error {
		cfg, err := remoteConfig(kubeconfig(server), r.remoteServers(), r.remoteProxy())
		if err != nil {
			return err
		}
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return err
		}
		_, err = dc.ServerGroups()
		return err
	}
	g := NewWithT(t)
	strict, loopback := &Resolver{}, &Resolver{AllowLoopbackKubeConfigServers: true}
	g.Expect(groups(strict, srv.URL)).To(MatchError(ContainSubstring("refused: loopback (--allow-loopback-kubeconfig-servers allows it)")))
	g.Expect(groups(loopback, srv.URL)).To(Succeed())
	for _, server := range []string{"https://169.254.169.254", "https://[fd00:ec2::254]", "https://100.100.100.200:443"} {
		g.Expect(groups(loopback, server)).To(MatchError(ContainSubstring("refused")), server)
	}
}

// certPEM is the test server's certificate, as a kubeconfig's
// certificate-authority-data.
func certPEM(t *testing.T, srv *httptest.Server) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}
