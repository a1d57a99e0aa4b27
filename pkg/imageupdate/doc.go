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
// with ErrLimit naming the bound; a failed run writes nothing. Files are
// parsed into kyaml's node tree and never into Go values, and aliases are
// not followed, so an alias bomb costs its size only.
//
// The Result has Flux's shape for commit message templates: FileChanges
// (file, relative to update.path → object → changes), and Objects and
// Changes across files, each Change with OldValue, NewValue and Setter.
//
// # Commit message
//
// ParseMessageTemplate reads git.commit.messageTemplate, a Go
// text/template over TemplateData (.AutomationObject, .Changed with
// FileChanges, Objects and Changes, .Values), so Flux's templates work
// unchanged as long as they use the functions offered (Flux offers
// sprig's; here the bounded text helpers of plumb.dev/pkg/textbudget,
// which Alerts use too: lower, upper, contains, replace, ...). A template is
// user input run on the controller, so it is bounded: at parse by size
// (MaxTemplateBytes) and shape (one template; every {{range}} goes over
// a map or list of the data, never a number or a function, at most
// MaxRangeDepth deep, so the work is at most the number of changes
// squared, and Limits.MaxChanges bounds that), at execution by output
// (MaxMessageBytes), by the text its functions build, and by time
// (ExecTimeout), through textbudget's Runner.
//
// # Commit and push
//
// Run clones git.checkout.ref into a folder (a branch or tag shallow, a
// commit from a full clone), makes the commit on the push branch
// (git.push.branch, else the checkout's branch), runs Setters there, and
// when something changed commits it as git.commit.author (author and
// committer), signed with the OpenPGP key when one is given
// (ReadSigningKey reads Flux's git.asc and passphrase) or with the SSH
// key (ReadSSHSigningKey reads identity and password; the signature is
// Git's gpg.format=ssh one, made by plumb.dev/pkg/sshsig), and pushes the
// branch, plus git.push.refspec when set, with git.push.options. Nothing
// changed: no commit, no push.
//
// A push branch other than the checkout's is the review-branch flow:
// when it exists the commit goes on its head, so commits there are kept;
// when not it starts at the checkout. Flux force-pushes that branch by
// default; Plumb never forces a push.
//
// When the push is rejected because the branch moved (a person pushed
// meanwhile), Run fetches the new head, checks it out and runs the
// setters again on that tree, then commits and pushes again, up to
// Options.MaxAttempts pushes. It does not rebase its commit: the commit
// is nothing but the result of the setters on a tree, so running them on
// the new tree gives the right result by construction, where replaying a
// textual diff could conflict or apply to a line the person moved; and
// when the person's commit already made the same change, the second run
// finds nothing to do and commits nothing. A failure that is not a moved
// branch (auth, a hook refusing the push) is returned as it is.
//
// The checkout is bounded on disk like source-controller's
// (Limits.MaxRepositoryBytes through plumb.dev/pkg/diskbudget), and in
// time by the caller's context (the GitRepository's spec.timeout).
// Credentials come from the caller as go-git auth: plumb.dev/pkg/gitauth
// builds it from the GitRepository's Secret as source-controller does.
// Where Run may connect is the caller's to fence: go-git's transports are
// process-wide, and plumb.dev/pkg/gitreach installs ones that route each
// connection through the address policy its context carries; a program
// calling Run with tenants' URLs imports it and passes Run the context,
// URL and auth of gitreach.Reach (and no CABundle or Proxy in Remote,
// which Reach puts in the fenced transport), as image-controller does.
//
// Errors wrapping ErrInvalid come from the automation's spec (no retry
// helps); ErrLimit and ErrPath from the repository's content. No error
// of Run shows a URL's user info: go-git quotes URLs whole.
package imageupdate
