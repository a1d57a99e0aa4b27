// Package imagebuild makes the container images of Plumb's programs from
// their Go modules, without Docker or any daemon, the way ko and
// go-containerregistry do: `go build` a static binary per platform, put it
// on a minimal base assembled here, and join the platforms in one OCI image
// index. `make images` runs it through the command imagebuild/cmd/images;
// docs/images.md is the user's side.
//
// # What an image holds
//
// Two layers. The base (base.go), the same in every image so a registry
// stores it once: /etc/passwd and /etc/group with root, nobody and nonroot
// (65532), whose login shell is /sbin/nologin, a file that does not exist;
// /etc/nsswitch.conf so Go's resolver reads /etc/hosts before DNS; the CA
// certificates at /etc/ssl/certs/ca-certificates.crt, where Go's crypto/x509
// looks on Linux; /tmp and nonroot's home. No shell, no package manager, no
// libc. The second layer is the program alone, at /<program>, the
// entrypoint. The config runs it as USER 65532:65532 and carries the
// labels org.opencontainers.image.{title,version,revision,source,created}.
//
// # Reproducible
//
// Two builds of one commit give the same digests, on any machine with the
// same Go toolchain, because nothing in an image comes from the build host
// or the clock:
//
//   - the binary: CGO_ENABLED=0, -trimpath (no clone paths), -buildvcs=false
//     (the commit comes in by -ldflags -X into plumb.dev/pkg/version, not from
//     a .git that a dirty file would change), GOFLAGS cleared and GOAMD64 /
//     GOARM64 fixed so the host's environment cannot change the code;
//   - the CA certificates: Mozilla's roots as Go data in the module
//     golang.org/x/crypto/x509roots/fallback, pinned by pkg/go.mod, not the
//     host's /etc/ssl (bundle.go says which roots are left out and why);
//   - the layers: tar entries sorted, owned by 0:0 (nonroot's home by
//     65532), every mtime the build's Created time, gzip from Go's
//     compress/gzip with no name and no time in its header;
//   - the config's and the history's times: Created, which `make images`
//     sets to the commit's time (SOURCE_DATE_EPOCH overrides it).
//
// # Publishing and checking
//
// Push writes an index to a registry; plain HTTP is refused unless the
// registry is a loopback address (127.0.0.1, ::1, localhost), since
// go-containerregistry would otherwise fall back to HTTP for private
// (RFC 1918) addresses too. WriteLayout writes an OCI image layout instead.
// Check reads an image back and fails unless it runs as 65532, its
// entrypoint is its program, it has no shell, passwd names 65532 and the CA
// bundle parses; for the build host's platform it also extracts the binary
// and runs it with --help. `make images` checks every image it made.
//
// # The example app and a local node
//
// The same builder makes the sample application's images from
// deploy/examples/images (ExamplePrograms: a web server and a migration
// hook, standard library only, tagged ExampleVersion, their version linked
// into main through Options.VersionPackage); `make example-images` builds
// them. PushLocal (local.go) is what a local node's registry is filled
// with: Plumb's five programs (PlumbPrograms) and the examples, for the
// host's platform only, checked, pushed, and cached as OCI layouts under
// ~/.cache/plumb/images keyed by everything that goes into them
// (sources.go hashes the programs' source folders as Git sees the working
// tree), so a second start only pushes.
package imagebuild
