// Command incluster is what a real node's Pod checks of the cluster around
// it, as Plumb's controllers need it: a Service found by its DNS name
// (TARGET, an http URL), and the API server reached as client-go's
// in-cluster configuration reaches it (KUBERNETES_SERVICE_HOST and _PORT,
// the ServiceAccount's token and CA) and by the name kubernetes.default.svc,
// the serving certificate verified both ways. It writes what it found to
// the termination message and exits 1 at the first failure.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

var report strings.Builder

func main() {
	err := run()
	if err != nil {
		fmt.Fprintf(&report, "FAIL: %v\n", err)
	}
	fmt.Print(report.String())
	_ = os.WriteFile("/dev/termination-log", []byte(report.String()), 0o644)
	if err != nil {
		os.Exit(1)
	}
}

func run() error {
	web := &http.Client{Timeout: 5 * time.Second}
	resp, err := web.Get(os.Getenv("TARGET"))
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	fmt.Fprintf(&report, "service: %s", body)

	token, err := os.ReadFile(saDir + "/token")
	if err != nil {
		return err
	}
	ca, err := os.ReadFile(saDir + "/ca.crt")
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return fmt.Errorf("%s/ca.crt holds no certificate", saDir)
	}
	api := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	hosts := []string{
		net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")),
		"kubernetes.default.svc",
	}
	for _, host := range hosts {
		user, err := whoAmI(api, host, strings.TrimSpace(string(token)))
		if err != nil {
			return err
		}
		fmt.Fprintf(&report, "api %s: %s\n", host, user)
	}
	return nil
}

// whoAmI asks the API server at host who the token is (a
// SelfSubjectReview, which every authenticated user may create).
func whoAmI(c *http.Client, host, token string) (string, error) {
	req, err := http.NewRequest(http.MethodPost, "https://"+host+"/apis/authentication.k8s.io/v1/selfsubjectreviews",
		bytes.NewReader([]byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("%s: %s: %s", host, resp.Status, data)
	}
	var review struct {
		Status struct {
			UserInfo struct {
				Username string `json:"username"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if err := json.Unmarshal(data, &review); err != nil {
		return "", err
	}
	return review.Status.UserInfo.Username, nil
}
