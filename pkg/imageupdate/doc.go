// Package imageupdate is the Git side of image update automation: it
// writes the images that ImagePolicies chose into a Git repository's
// manifests, commits the change and pushes it. The image-controller's
// ImageUpdateAutomation reconciler calls it with plain inputs (the
// policies' latest refs keyed by "namespace:name", the checkout, commit
// and push settings), so it knows no API type.
//
// # Setters
//
// Setters is Flux's Setters strategy. A field is marked by a line comment
// holding a JSON object with the "$imagepolicy" key:
//
//	image: ghcr.io/org/app:1.0.0 # {"$imagepolicy": "apps:app"}
//	newTag: 1.0.0                # {"$imagepolicy": "apps:app:tag"}
//
// "ns:name" gives the full reference (name:tag, name:tag@digest when the
// policy reflects digests); the suffixes ":tag", ":name" and ":digest"
// give one part. A marker naming no known policy, or a part the policy
// lacks (a digest without digest reflection), leaves the field alone:
// writing an empty value would break the image.
//
// Files are read with kyaml's YAML parser (comments and positions kept),
// but never re-serialised: each changed value's bytes are replaced where
// the parser located them, in the value's own quoting style (a plain
// value that would read back as another type is double-quoted), and the
// edited file is parsed again to check that every marker reads back its
// new value. Everything else in a file stays byte for byte, whatever
// kyaml's encoder would have made of indentation, quoting or comments.
//
// Only .yaml and .yml files under update.path are read, and only those
// that hold the token "$imagepolicy" are parsed, so Helm templates and
// other files are never touched; a file that does not parse as YAML is
// skipped, as Flux does; only documents that are mappings are searched
// (a kustomization.yaml without apiVersion and kind counts: its changes
// are recorded under an empty ObjectIdentifier). update.path must stay
// in the tree: an absolute path, "..", or a symbolic link on its way is
// refused (ErrPath); links met while walking are never followed. A
// repository is untrusted input, so the walk is bounded (Limits: entries
// walked, bytes per file and in all, fields changed, time) and fails
// with ErrLimit naming the bound; a failed run writes nothing.
//
// The Result has Flux's shape for commit message templates: FileChanges
// (file, relative to update.path → object → changes), and Objects and
// Changes across files, each Change with OldValue, NewValue and Setter.
package imageupdate
