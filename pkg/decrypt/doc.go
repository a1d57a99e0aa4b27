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
// The code is the SOPS library's decryption (v3.13.3), reimplemented so
// that render-controller does not link the library: each format's reader
// and printer (yaml.go, json.go, dotenv.go, ini.go), the sops metadata and
// key groups (metadata.go), the data key from the Secret's keys only, no
// GnuPG home, environment or cloud KMS (datakey.go, shamir.go), and the
// values with the rules of which are encrypted (tree.go). The output is
// byte for byte the library's; differential_test.go and
// FuzzDecryptMatchesLibrary hold it there with the library linked in test
// code only (decrypttest and the _test.go files). Why: the library's root
// package imports its key service and with it the AWS, GCP, Azure, Vault
// and Huawei KMS clients, and its stores S3 and GCS clients; Go runs every
// package's init in every process, render-controller and each render
// worker. A binary importing pkg/render and this package measured 83.0 MB
// and 53.2 MiB RSS at start with the library, 33.8 MB and 23.7 MiB without
// (pkg/render alone: 32.8 MB, 22.0 MiB); render-controller went from
// 160.6 MB, 743 package inits and 8.9 MB allocated by them to 98.2 MB, 423
// and 5.9 MB, an idle render worker from 10.3 to 7.7 MiB of anonymous
// memory. docs/design/sops.md has the figures. Bounds (MaxFileBytes, MaxDepth, MaxValues, MaxMasterKeys,
// MaxKeyGroups) keep a hostile file small. pkg/render takes a
// render.Decryptor interface, which *Decryptor implements, and only
// render-controller and its render workers (pkg/renderworker) import this
// package.
package decrypt
