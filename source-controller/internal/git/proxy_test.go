package git

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestProxyFromSecret(t *testing.T) {
	tests := []struct {
		name      string
		url       string
		data      map[string]string
		want      string // the proxy URL
		user, pw  string
		refusedIn string
	}{
		{name: "http", url: "https://git.example.com/r.git", data: map[string]string{"address": "http://proxy:3128"}, want: "http://proxy:3128"},
		{name: "with-credentials", url: "http://git.example.com/r.git", data: map[string]string{"address": " https://proxy:3129\n", "username": "u", "password": "p"}, want: "https://proxy:3129", user: "u", pw: "p"},
		{name: "socks5", url: "https://git.example.com/r.git", data: map[string]string{"address": "socks5://127.0.0.1:1080"}, want: "socks5://127.0.0.1:1080"},
		{name: "no-address", url: "https://git.example.com/r.git", data: map[string]string{"username": "u"}, refusedIn: `no "address" key`},
		{name: "no-host", url: "https://git.example.com/r.git", data: map[string]string{"address": "proxy:3128"}, refusedIn: "is not a proxy URL"},
		{name: "ftp", url: "https://git.example.com/r.git", data: map[string]string{"address": "ftp://proxy"}, refusedIn: `unsupported proxy scheme "ftp"`},
		{name: "userinfo", url: "https://git.example.com/r.git", data: map[string]string{"address": "http://u:secret@proxy:3128"}, refusedIn: "put the proxy credentials in the"},
		{name: "ssh", url: "ssh://git@git.example.com/r.git", data: map[string]string{"address": "http://proxy:3128"}, refusedIn: "only used for http:// and https://"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			data := map[string][]byte{}
			for k, v := range tt.data {
				data[k] = []byte(v)
			}
			p, err := ProxyFromSecret(tt.url, data, "ns/proxy")
			if tt.refusedIn != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.refusedIn)))
				g.Expect(err.Error()).To(ContainSubstring("spec.proxySecretRef: Secret ns/proxy"))
				g.Expect(err.Error()).NotTo(ContainSubstring("secret@"))
				g.Expect(KindOf(err)).To(Equal(InvalidSpec))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.URL).To(Equal(tt.want))
			g.Expect(p.Username).To(Equal(tt.user))
			g.Expect(p.Password).To(Equal(tt.pw))
		})
	}
}
