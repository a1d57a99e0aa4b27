package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestUIServesWithTheKubeconfigsIdentityBehindTheSecretItPrints(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"--kubeconfig", kubeconfig, "ui", "--address=127.0.0.1:0", "--no-open", "--nats-url="}, &out, &errOut)
	}()
	address := regexp.MustCompile(`open (http://127\.0\.0\.1:\d+/)#/\?login=(\S+)`)
	var m []string
	g.Eventually(func() []string { m = address.FindStringSubmatch(out.String()); return m }, time.Minute, 50*time.Millisecond).
		ShouldNot(BeNil(), "stderr: %s", errOut.String())
	base, secret := m[1], m[2]

	jar, err := cookiejar.New(nil)
	g.Expect(err).NotTo(HaveOccurred())
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	body, _ := json.Marshal(map[string]string{"secret": secret})
	resp, err := c.Post(base+"api/login", "application/json", bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	resp, err = c.Get(base + "api/overview")
	g.Expect(err).NotTo(HaveOccurred())
	var page struct {
		Total int `json:"total"`
	}
	g.Expect(json.NewDecoder(resp.Body).Decode(&page)).To(Succeed())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))

	cancel()
	g.Eventually(done, 30*time.Second).Should(Receive(Equal(ExitOK)), "Ctrl-C ends it cleanly")
}
