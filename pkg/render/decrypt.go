package render

import (
	"fmt"
	"path/filepath"
	"strings"

	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// SOPS decryption during a build (Options.Decryptor; pkg/decrypt and
// docs/design/sops.md). Files are decrypted as kustomize reads them,
// in memory: when sandboxFS reads a kustomization, it notes the files its
// secretGenerator and configMapGenerator entries (files, envs, env) and
// its patches[].path name, with the SOPS format each is read in; when
// kustomize then reads one of them and it holds its format's SOPS marker,
// ReadFile returns the plaintext. The file on disk stays encrypted.
// Objects (a Secret manifest with a sops block, a Secret data value that
// is a SOPS file) are decrypted after kustomize, in finish.

// Decryptor decrypts SOPS-encrypted inputs for Build; pkg/decrypt's
// Decryptor is the implementation. An interface, so that the modules that
// render without decrypting (source-controller checks charts with
// pkg/helmrender, `plumb build`) do not link the SOPS library and its
// cloud clients.
type Decryptor interface {
	// Source returns the plaintext of a file kustomize reads as a
	// generator input or patch, when it is SOPS-encrypted, and whether it
	// was. formatFrom is the name whose extension gives the SOPS format
	// (a generator file's data key, else the path); env says the file is
	// a generator's env file.
	Source(name string, data []byte, formatFrom string, env bool) ([]byte, bool, error)
	// Object decrypts a rendered object, returning it and whether anything
	// was decrypted.
	Object(name string, node *kyaml.RNode) (*kyaml.RNode, bool, error)
	// Redact removes every decrypted value from msg.
	Redact(msg string) string
}

// source is how kustomize reads a noted file: what Decryptor.Source takes
// besides the file.
type source struct {
	formatFrom string
	env        bool
}

// decryptErr reports a decryption failure.
func decryptErr(format string, args ...any) error {
	return &Error{Reason: kustomizev1.DecryptionFailedReason, Err: fmt.Errorf(format, args...)}
}

// noteSources records the files the kustomization at path (its contents
// data) has kustomize read as generator inputs or patches.
func (s *sandboxFS) noteSources(path string, data []byte) {
	var k kustypes.Kustomization
	if yaml.Unmarshal(data, &k) != nil {
		return // kustomize reports a malformed kustomization itself
	}
	dir := filepath.Dir(path)
	note := func(p string, use source) {
		if p == "" || strings.Contains(p, "://") {
			return
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		d, name, err := s.disk.CleanedAbs(p)
		if err != nil {
			return // missing or outside: kustomize's read says so
		}
		s.mu.Lock()
		s.sources[d.Join(name)] = use
		s.mu.Unlock()
	}
	gens := make([]kustypes.GeneratorArgs, 0, len(k.SecretGenerator)+len(k.ConfigMapGenerator))
	for _, g := range k.SecretGenerator {
		gens = append(gens, g.GeneratorArgs)
	}
	for _, g := range k.ConfigMapGenerator {
		gens = append(gens, g.GeneratorArgs)
	}
	for _, g := range gens {
		for _, src := range g.FileSources {
			// "key=path" or "path": the key, which names the data entry,
			// gives the format (Flux's rule).
			key, file, found := strings.Cut(src, "=")
			if !found {
				file = key
			}
			note(file, source{formatFrom: key})
		}
		for _, env := range append(append([]string{}, g.EnvSources...), g.EnvSource) {
			note(env, source{formatFrom: env, env: true})
		}
	}
	for _, p := range k.Patches {
		note(p.Path, source{formatFrom: p.Path})
	}
}

// decryptSource returns the plaintext of the file at real when it is a
// noted source encrypted with SOPS, charging the plaintext to the byte
// budget; any other file is returned as it is.
func (s *sandboxFS) decryptSource(real, rel string, data []byte) ([]byte, error) {
	s.mu.Lock()
	use, ok := s.sources[real]
	s.mu.Unlock()
	if !ok {
		return data, nil
	}
	plain, decrypted, err := s.decryptor.Source(rel, data, use.formatFrom, use.env)
	if err != nil {
		return nil, s.refuse(decryptErr("decrypting %v", err))
	}
	if decrypted {
		if err := s.chargeBytes(rel+" (decrypted)", int64(len(plain))); err != nil {
			return nil, err
		}
	}
	return plain, nil
}
