// Package decrypt decrypts SOPS-encrypted files and objects in memory for
// render-controller: the body of a Kustomization's spec.decryption (Flux's
// field and semantics). docs/design/sops.md has the design; in short:
//
//   - Keys come from the Secret that spec.decryption.secretRef names: each
//     key ending in .agekey holds age identities, each ending in .asc
//     armored OpenPGP private keys (without a passphrase). Other keys are
//     ignored, as Flux ignores the cloud KMS credentials it would read
//     there. ParseKeys bounds their number and size.
//   - A Decryptor is made for one render. File decrypts a file kustomize
//     reads through a secretGenerator or configMapGenerator (files, envs)
//     or a patches[].path, when it is SOPS-encrypted in the format its name
//     gives (FormatForPath: .yaml/.yml, .json, .env, .ini, anything else
//     binary; an env file of another name is dotenv); Object decrypts a
//     rendered object with a top-level sops block holding a mac, and each
//     data value of a Secret that is itself a SOPS file (recognised by the
//     format's marker, as Flux does).
//   - Nothing is written anywhere: the plaintext is returned to the caller
//     and remembered, so that Redact can remove it from messages. The MAC
//     is not checked, as in Flux: kustomize rewrites objects (names,
//     labels, key order), which changes what the MAC was computed over.
//
// The data key of a file is recovered by a key service of this package
// (keyServer) that knows only the keys from the Secret: no GnuPG home on
// disk, no environment, no cloud KMS. The SOPS library's own key service
// is never called. The library's root package imports its key service,
// which imports the AWS, GCP, Azure, Vault and Huawei KMS clients, and its
// stores import its config package, which imports S3 and GCS clients for
// publishing: none of that can be avoided with the library (v3.13.3), so
// those modules are in the build of whatever imports this package, but none
// of their code is reached. pkg/render therefore takes a render.Decryptor
// interface, which *Decryptor implements, and only render-controller
// imports this package.
package decrypt
