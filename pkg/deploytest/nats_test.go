package deploytest

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	natsserver "github.com/nats-io/nats-server/v2/server"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestNATSConfigMatchesTheControllers reads the rendered NATS configuration
// the way nats-server does, with each password taken from the Secret key
// the StatefulSet maps to it, and checks every controller against it: its
// --nats-user exists, the Secret key mounted at its --nats-password-file
// is that user's password, and its --nats-inbox-prefix is where that user
// may receive replies. (pkg/events' tests run the same accounts.conf on a
// real server.)
func TestNATSConfigMatchesTheControllers(t *testing.T) {
	g := NewWithT(t)
	objs := buildBase(t)
	users := natsUsers(t, objs)

	for _, name := range controllers {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			d := typed[appsv1.Deployment](t, find(objs, "Deployment", name))
			c := d.Spec.Template.Spec.Containers[0]
			user, _ := flagValue(c.Args, "nats-user")
			g.Expect(users).To(HaveKey(user), "--nats-user")
			u := users[user]
			g.Expect(u.Account.Name).To(Equal("PLUMB"))

			file, ok := flagValue(c.Args, "nats-password-file")
			g.Expect(ok).To(BeTrue(), "--nats-password-file")
			g.Expect(mountedSecretKey(d.Spec.Template.Spec, c, file)).To(Equal(strings.TrimPrefix(u.Password, "key:")),
				"the file at --nats-password-file holds the password of %s", user)

			prefix, _ := flagValue(c.Args, "nats-inbox-prefix")
			g.Expect(u.Permissions.Subscribe.Allow).To(ConsistOf(prefix + ".>"))
		})
	}
	g.Expect(users).To(HaveKeyWithValue("alerts", HaveField("Account.Name", Not(Equal("PLUMB")))),
		"the nats alert provider's user lives in an account of its own")
}

// mountedSecretKey returns the key of Secret nats-credentials that a
// container sees at file, or "" when none is mounted there.
func mountedSecretKey(pod corev1.PodSpec, c corev1.Container, file string) string {
	for _, m := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != m.Name || v.Secret == nil || v.Secret.SecretName != "nats-credentials" {
				continue
			}
			for _, item := range v.Secret.Items {
				if item.Path == rel {
					return item.Key
				}
			}
			if len(v.Secret.Items) == 0 {
				return rel
			}
		}
	}
	return ""
}

// natsArgs returns the NATS flags a controller started by a test runs
// with: the user its Deployment names, that user's password, and TLS with
// the test server's client certificate.
func natsArgs(t *testing.T, name string) []string {
	t.Helper()
	d := typed[appsv1.Deployment](t, find(buildBase(t), "Deployment", name))
	user, ok := flagValue(d.Spec.Template.Spec.Containers[0].Args, "nats-user")
	if !ok {
		t.Fatalf("the %s Deployment has no --nats-user", name)
	}
	a := env.SecureNATS.Auth(user)
	return []string{"--nats-url=" + env.NATSURL, "--nats-user=" + a.User, "--nats-password-file=" + a.PasswordFile,
		"--nats-ca-file=" + a.CAFile, "--nats-cert-file=" + a.CertFile, "--nats-key-file=" + a.KeyFile,
		"--nats-inbox-prefix=" + a.InboxPrefix}
}

// natsUsers returns the users of the NATS configuration that the rendered
// StatefulSet mounts, read as nats-server reads it, each password being
// "key:<the nats-credentials key it comes from>".
func natsUsers(t *testing.T, objs []*unstructured.Unstructured) map[string]*natsserver.User {
	t.Helper()
	g := NewWithT(t)
	opts := natsOptions(t, objs, "nats-0")
	g.Expect(opts.JetStream).To(BeTrue())
	g.Expect(opts.StoreDir).To(Equal("/data"))
	users := map[string]*natsserver.User{}
	for _, u := range opts.Users {
		users[u.Username] = u
		g.Expect(u.Password).To(HavePrefix("key:"), "user %s has a password that is not from nats-credentials", u.Username)
	}
	g.Expect(opts.NoAuthUser).To(BeEmpty(), "no anonymous user")
	return users
}

// natsOptions reads the NATS configuration that the rendered StatefulSet
// mounts as nats-server reads it in the pod named podName: each password
// variable holds "key:<the nats-credentials key it comes from>", and a
// variable from the pod's name holds podName.
func natsOptions(t *testing.T, objs []*unstructured.Unstructured, podName string) *natsserver.Options {
	t.Helper()
	g := NewWithT(t)
	sts := typed[appsv1.StatefulSet](t, find(objs, "StatefulSet", "nats"))
	pod := sts.Spec.Template.Spec
	g.Expect(pod.Containers).To(HaveLen(1))
	server := pod.Containers[0]

	// The configuration the pod mounts, written out as the pod sees it.
	var configMap string
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil {
			configMap = v.ConfigMap.Name
		}
	}
	cm := find(objs, "ConfigMap", configMap)
	g.Expect(cm).NotTo(BeNil(), "the StatefulSet mounts ConfigMap %q, which the install does not have", configMap)
	data := typed[corev1.ConfigMap](t, cm).Data
	dir := t.TempDir()
	for name, content := range data {
		g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600)).To(Succeed())
	}
	flag, ok := flagValue(server.Args, "config")
	g.Expect(ok).To(BeTrue(), "--config")
	g.Expect(data).To(HaveKey(path.Base(flag)))

	// Each password variable gets the name of its Secret key as value, so
	// the parsed users say which key holds their password.
	for _, e := range server.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			g.Expect(e.ValueFrom.SecretKeyRef.Name).To(Equal("nats-credentials"))
			t.Setenv(e.Name, "key:"+e.ValueFrom.SecretKeyRef.Key)
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			t.Setenv(e.Name, podName)
		}
	}
	opts, err := natsserver.ProcessConfigFile(filepath.Join(dir, path.Base(flag)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(server.VolumeMounts).To(ContainElement(HaveField("MountPath", opts.StoreDir)), "the store is on the volume")
	return opts
}
