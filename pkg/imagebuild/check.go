package imagebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// shells are the names no image may hold: with one, `kubectl exec` and an
// attacker's payload would have an interpreter.
var shells = []string{"sh", "bash", "ash", "dash", "zsh", "ksh", "busybox"}

// The bounds on what Check reads, since it may read an image from a
// registry someone else writes to.
const (
	maxCheckedFile = 512 << 20 // the binary
	maxSmallFile   = 1 << 20   // passwd, the CA bundle
	helpTimeout    = time.Minute
)

// Check reads back the image idx holds for each platform and fails unless
// every one is what Build makes: USER 65532:65532, the entrypoint
// /<program>, the labels, no shell, passwd with nonroot 65532, a CA bundle
// that parses, an entrypoint that is a static ELF executable for the
// entry's platform. The image of the build host's platform is also run:
// its binary with --help, which must exit 0 and print a usage. The other
// platforms' binaries cannot run here; the ELF check is what proves they
// were built for their platform and need no loader.
func Check(ctx context.Context, idx v1.ImageIndex, program string, workDir string) error {
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	if len(m.Manifests) == 0 {
		return fmt.Errorf("%s: the index names no image", program)
	}
	for _, d := range m.Manifests {
		if d.Platform == nil {
			return fmt.Errorf("%s: index entry %s has no platform", program, d.Digest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		if err := checkImage(ctx, img, program, *d.Platform, filepath.Join(workDir, "check-"+d.Platform.OS+"-"+d.Platform.Architecture)); err != nil {
			return fmt.Errorf("%s for %s: %w", program, platformString(*d.Platform), err)
		}
	}
	return nil
}

func checkImage(ctx context.Context, img v1.Image, program string, platform v1.Platform, dir string) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	var problems []string
	if cf.Config.User != User {
		problems = append(problems, fmt.Sprintf("user %q, want %q", cf.Config.User, User))
	}
	entrypoint := "/" + program
	if !slices.Equal(cf.Config.Entrypoint, []string{entrypoint}) {
		problems = append(problems, fmt.Sprintf("entrypoint %q, want [%s]", cf.Config.Entrypoint, entrypoint))
	}
	for _, l := range []string{LabelTitle, LabelVersion, LabelCreated} {
		if cf.Config.Labels[l] == "" {
			problems = append(problems, "no label "+l)
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	binary := filepath.Join(dir, program)
	if err := checkFiles(img, entrypoint, binary); err != nil {
		return err
	}
	if err := checkELF(binary, platform); err != nil {
		return err
	}
	if platform.OS == runtime.GOOS && platform.Architecture == runtime.GOARCH {
		// Kept in dir: the host's binary is what a caller may run again.
		return runHelp(ctx, binary)
	}
	return os.Remove(binary)
}

// elfMachines are the ELF machines of the platforms Build makes.
var elfMachines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64,
	"arm64": elf.EM_AARCH64,
}

// checkELF fails unless binary is an ELF executable for platform's
// architecture with no program interpreter: an image has no dynamic loader
// or C library, so a binary that asks for one cannot start in it.
func checkELF(binary string, platform v1.Platform) error {
	want, ok := elfMachines[platform.Architecture]
	if !ok {
		return fmt.Errorf("no ELF machine known for %s", platformString(platform))
	}
	f, err := elf.Open(binary)
	if err != nil {
		return fmt.Errorf("the entrypoint is not an ELF file: %w", err)
	}
	defer f.Close()
	if f.Machine != want {
		return fmt.Errorf("the entrypoint is built for %s, not %s", f.Machine, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("the entrypoint is linked dynamically (it names a program interpreter); the image has no loader")
		}
	}
	return nil
}

// checkFiles reads the image's merged filesystem: no shell, passwd has
// nonroot, the CA bundle parses, the entrypoint is an executable file,
// which is written to binary.
func checkFiles(img v1.Image, entrypoint, binary string) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	var passwd, certs []byte
	found := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		name := "/" + strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		if slices.Contains(shells, path.Base(name)) {
			return fmt.Errorf("the image holds a shell: %s", name)
		}
		switch name {
		case "/etc/passwd":
			if passwd, err = readSmall(tr, h); err != nil {
				return err
			}
		case "/" + CACertificatesPath:
			if certs, err = readSmall(tr, h); err != nil {
				return err
			}
		case entrypoint:
			if h.Typeflag != tar.TypeReg || h.Mode&0o111 == 0 {
				return fmt.Errorf("%s is not an executable file", entrypoint)
			}
			found = true
			if err := extract(tr, h, binary); err != nil {
				return err
			}
		}
	}
	switch {
	case !found:
		return fmt.Errorf("no %s in the image", entrypoint)
	case !bytes.Contains(passwd, []byte(":65532:65532:")):
		return errors.New("/etc/passwd has no user 65532")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certs) {
		return fmt.Errorf("/%s holds no certificate", CACertificatesPath)
	}
	return nil
}

func readSmall(r io.Reader, h *tar.Header) ([]byte, error) {
	if h.Size > maxSmallFile {
		return nil, fmt.Errorf("%s: %d bytes, more than %d", h.Name, h.Size, maxSmallFile)
	}
	return io.ReadAll(io.LimitReader(r, maxSmallFile))
}

func extract(r io.Reader, h *tar.Header, to string) error {
	if h.Size > maxCheckedFile {
		return fmt.Errorf("%s: %d bytes, more than %d", h.Name, h.Size, maxCheckedFile)
	}
	f, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, io.LimitReader(r, maxCheckedFile)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runHelp runs binary --help with no environment (no KUBECONFIG to reach
// for) and a bound on its time.
func runHelp(ctx context.Context, binary string) error {
	ctx, cancel := context.WithTimeout(ctx, helpTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "--help")
	cmd.Env = []string{}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s --help: %w: %s", filepath.Base(binary), err, firstLines(out))
	}
	if !bytes.Contains(bytes.ToLower(out), []byte("usage")) {
		return fmt.Errorf("%s --help printed no usage: %s", filepath.Base(binary), firstLines(out))
	}
	return nil
}

func firstLines(b []byte) string {
	lines := strings.SplitN(strings.TrimSpace(string(b)), "\n", 6)
	return strings.Join(lines[:min(len(lines), 5)], "\n")
}
