package imagebuild

import (
	"bytes"
	"encoding/pem"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The non-root user every image runs as, distroless's "nonroot".
const (
	NonrootUID = 65532
	// User is the config's USER: uid and gid, so no passwd lookup is needed
	// to start, and Kubernetes' runAsNonRoot can verify it is not 0.
	User = "65532:65532"
	// CACertificatesPath is where Go's crypto/x509 reads the system roots on
	// Linux first (the Debian and Alpine path).
	CACertificatesPath = "etc/ssl/certs/ca-certificates.crt"
)

// nologin is every account's shell: it does not exist in the image, so no
// account can log in, and nothing named sh is needed.
const passwd = `root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
`

const group = `root:x:0:
nobody:x:65534:
nonroot:x:65532:
`

// Go's resolver (netgo, as CGO_ENABLED=0 builds it) reads the hosts order
// from here; without the file it still does files then DNS, but says so
// only by omission.
const nsswitch = "hosts: files dns\n"

// baseEntries is the base layer: the same bytes in every image.
func baseEntries() []entry {
	return []entry{
		dir("etc", 0o755),
		file("etc/group", 0o644, []byte(group)),
		file("etc/nsswitch.conf", 0o644, []byte(nsswitch)),
		file("etc/passwd", 0o644, []byte(passwd)),
		dir("etc/ssl", 0o755),
		dir("etc/ssl/certs", 0o755),
		file(CACertificatesPath, 0o644, caCertificates()),
		dir("home", 0o755),
		owned(dir("home/nonroot", 0o700), NonrootUID),
		dir("root", 0o700),
		dir("tmp", 0o1777),
	}
}

// caCertificates is Mozilla's root store as PEM, from the fallback bundle
// pinned in pkg/go.mod. A root that comes with a Constraint (today a
// distrust-after date, for a CA being phased out) is left out: a PEM file
// cannot carry the constraint, and trusting the root without it would
// accept the certificates Mozilla has stopped trusting.
func caCertificates() []byte {
	var b bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate})
	}
	return b.Bytes()
}
