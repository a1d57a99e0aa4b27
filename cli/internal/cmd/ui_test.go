package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"plumb.dev/ui/browsertest"
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
	var signedIn struct {
		CSRF string `json:"csrf"`
	}
	g.Expect(json.NewDecoder(resp.Body).Decode(&signedIn)).To(Succeed())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	resp, err = c.Get(base + "api/overview")
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusForbidden), "the cookie alone reads nothing")
	req, err := http.NewRequest(http.MethodGet, base+"api/overview", nil)
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("X-Plumb-CSRF", signedIn.CSRF)
	resp, err = c.Do(req)
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

// openedUI runs `plumb ui` with the browser's opener replaced, until the
// test ends, and returns what it printed and the target the opener got.
func openedUI(t *testing.T) (out *syncBuffer, target string) {
	g := NewWithT(t)
	opened := make(chan string, 1)
	open := openBrowser
	openBrowser = func(target string) error { opened <- target; return nil }
	ctx, cancel := context.WithCancel(context.Background())
	out = &syncBuffer{}
	var errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"--kubeconfig", kubeconfig, "ui", "--address=127.0.0.1:0", "--nats-url="}, out, &errOut)
	}()
	t.Cleanup(func() {
		cancel()
		g.Eventually(done, 30*time.Second).Should(Receive(Equal(ExitOK)), "Ctrl-C ends it cleanly")
		openBrowser = open
	})
	g.Eventually(opened, time.Minute).Should(Receive(&target), "stderr: %s", errOut.String())
	return out, target
}

func TestUIOpensTheBrowserOnAPrivatePageNeverWithTheSecretOnACommandLine(t *testing.T) {
	g := NewWithT(t)
	out, target := openedUI(t)
	m := regexp.MustCompile(`open (http://127\.0\.0\.1:\d+/)#/\?login=(\S+)`).FindStringSubmatch(out.String())
	g.Expect(m).NotTo(BeNil(), "the full address is printed in the terminal")
	base, secret := m[1], m[2]
	g.Expect(target).NotTo(ContainSubstring(secret), "the opener's argv is readable by every local user")

	file, err := os.Stat(target)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(file.Mode().Perm()).To(Equal(os.FileMode(0o600)))
	dir, err := os.Stat(filepath.Dir(target))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dir.Mode().Perm()).To(Equal(os.FileMode(0o700)))
	page, err := os.ReadFile(target)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(page)).To(ContainSubstring(`location.replace("` + base + `#/?login=` + secret + `")`))

	body, _ := json.Marshal(map[string]string{"secret": secret})
	resp, err := http.Post(base+"api/login", "application/json", bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Eventually(func() error { _, err := os.Stat(filepath.Dir(target)); return err }, 30*time.Second, 50*time.Millisecond).
		Should(MatchError(os.ErrNotExist), "the page goes once its secret was used")
}

func TestTheSignInPageSignsARealBrowserInAndLeavesNoSecretInItsAddress(t *testing.T) {
	g := NewWithT(t)
	_, target := openedUI(t)
	b := browsertest.Start(t)
	b.Go("file://"+target, "#user")
	b.Eventually("the page signed in as the kubeconfig's user", `document.getElementById('user').textContent !== ''`)
	b.Eventually("the secret left the address", `location.protocol === 'http:' && !location.href.includes('login=')`)
	g.Eventually(func() error { _, err := os.Stat(filepath.Dir(target)); return err }, 30*time.Second, 50*time.Millisecond).
		Should(MatchError(os.ErrNotExist), "the page goes once its secret was used")
}
