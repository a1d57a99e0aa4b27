package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// serviceAccountDir is where the kubelet mounts a Pod's ServiceAccount
// token, the cluster's CA and the Pod's namespace.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// fieldManager is the hook's name in the ConfigMap's managedFields.
const fieldManager = "plumb-example-hook"

// The bounds on what the API server may send back.
const (
	maxResponse    = 1 << 20
	requestTimeout = 30 * time.Second
)

// cluster is the API server as the Pod's ServiceAccount reaches it: the
// standard library only, so the example needs no client-go.
type cluster struct {
	server    string
	token     string
	namespace string
	client    *http.Client
}

// inCluster reads the ServiceAccount's files in dir; server defaults to
// the address the kubelet puts in every Pod's environment.
func inCluster(server, dir string) (*cluster, error) {
	if server == "" {
		host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
		if host == "" || port == "" {
			return nil, errors.New("not in a Pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset (or give -api-server)")
		}
		server = "https://" + net.JoinHostPort(host, port)
	}
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "", fmt.Errorf("the Pod's ServiceAccount: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	token, err := read("token")
	if err != nil {
		return nil, err
	}
	namespace, err := read("namespace")
	if err != nil {
		return nil, err
	}
	ca, err := read("ca.crt")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(ca)) {
		return nil, fmt.Errorf("%s holds no certificate", filepath.Join(dir, "ca.crt"))
	}
	return &cluster{
		server:    strings.TrimSuffix(server, "/"),
		token:     token,
		namespace: namespace,
		client: &http.Client{
			Timeout:   requestTimeout,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
		},
	}, nil
}

func (c *cluster) configMapURL(name string) string {
	return c.server + "/api/v1/namespaces/" + url.PathEscape(c.namespace) + "/configmaps/" + url.PathEscape(name)
}

// do sends a request and decodes a 2xx answer into out; a 404 is
// reported as found=false.
func (c *cluster) do(method, u, contentType string, body []byte, out any) (found bool, err error) {
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return false, err
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return false, nil
	case resp.StatusCode/100 != 2:
		var st struct{ Message string }
		_ = json.Unmarshal(data, &st)
		return false, fmt.Errorf("%s %s: %s: %s", method, u, resp.Status, st.Message)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return false, fmt.Errorf("%s %s: %w", method, u, err)
		}
	}
	return true, nil
}

// getData returns the ConfigMap's value of key, "" when either is absent.
func (c *cluster) getData(name, key string) (string, error) {
	var cm struct{ Data map[string]string }
	found, err := c.do(http.MethodGet, c.configMapURL(name), "", nil, &cm)
	if err != nil || !found {
		return "", err
	}
	return cm.Data[key], nil
}

// applyData server-side-applies data to the ConfigMap, creating it if
// needed; the hook owns only the keys it writes.
func (c *cluster) applyData(name string, data map[string]string) error {
	body, err := json.Marshal(map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]string{"name": name, "namespace": c.namespace},
		"data":       data,
	})
	if err != nil {
		return err
	}
	u := c.configMapURL(name) + "?fieldManager=" + fieldManager + "&force=true"
	found, err := c.do(http.MethodPatch, u, "application/apply-patch+yaml", body, nil)
	if err == nil && !found {
		err = fmt.Errorf("PATCH %s: the namespace %s does not exist", u, c.namespace)
	}
	return err
}
