package cmd

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/imageupdate"
)

// `plumb create image repository|policy|update`, with Flux's flags. What
// image-controller would refuse for good (an image that is no repository
// name, a pattern Go's regexp does not compile, an extract naming a group
// the pattern lacks, a commit template pkg/imageupdate refuses) is refused
// here, so that --export prints only what works.

func newCreateImageCmd(o *createOpts) *cobra.Command {
	c := &cobra.Command{
		Use:   "image",
		Short: "Create or update an ImageRepository, ImagePolicy or ImageUpdateAutomation",
	}
	c.AddCommand(newCreateImageRepositoryCmd(o), newCreateImagePolicyCmd(o), newCreateImageUpdateCmd(o))
	return c
}

func newCreateImageRepositoryCmd(o *createOpts) *cobra.Command {
	var image, secretRef, certRef string
	var scanTimeout time.Duration
	var insecure bool
	var exclusions []string
	c := o.leaf("repository", "Create or update an ImageRepository, which scans a registry's tags",
		"  plumb create image repository podinfo --image=ghcr.io/stefanprodan/podinfo --interval=5m\n"+
			"  plumb create image repository app --image=registry.example.com/team/app --secret-ref=regcred --exclusion-list='^.*\\.sig$' --exclusion-list='-rc'",
		func(t target) (built, error) {
			if image == "" {
				return built{}, errRequired("image")
			}
			if err := checkImageName(image, insecure); err != nil {
				return built{}, err
			}
			for _, e := range exclusions {
				if _, err := regexp.Compile(e); err != nil {
					return built{}, fmt.Errorf("--exclusion-list %q: %w", e, err)
				}
			}
			if scanTimeout < 0 || scanTimeout >= time.Hour {
				// The CRD's pattern takes ms, s and m: an hour's scan is
				// no scan.
				return built{}, fmt.Errorf("--scan-timeout %s: want more than 0 and less than an hour", scanTimeout)
			}
			repo := &imagev1.ImageRepository{
				ObjectMeta: objectMeta(t),
				Spec: imagev1.ImageRepositorySpec{
					Image: image, Interval: metav1.Duration{Duration: o.interval},
					SecretRef: localRef(secretRef), CertSecretRef: localRef(certRef),
					Insecure: insecure, ExclusionList: exclusions,
				},
			}
			if scanTimeout > 0 {
				repo.Spec.Timeout = &metav1.Duration{Duration: scanTimeout}
			}
			return built{objs: []client.Object{repo}, wait: imageRepoKind}, nil
		})
	f := c.Flags()
	f.StringVar(&image, "image", "", "Image repository to scan, without tag or digest, e.g. ghcr.io/org/app (docker.io/library/ for a bare name).")
	f.StringVar(&secretRef, "secret-ref", "", "Name of a kubernetes.io/dockerconfigjson Secret with the registry's credentials (plumb create secret oci).")
	f.StringVar(&certRef, "cert-ref", "", "Name of a Secret with the registry's CA and client certificate (plumb create secret tls).")
	f.DurationVar(&scanTimeout, "scan-timeout", 0, "Timeout of one scan (spec.timeout); the interval when 0.")
	f.BoolVar(&insecure, "insecure", false, "Reach the registry over plain HTTP.")
	f.StringArrayVar(&exclusions, "exclusion-list", nil, "Regular expression of tags to leave out of the scan (repeat the flag for several); ^.*\\.sig$ when none.")
	return c
}

// checkImageName refuses what image-controller refuses in spec.image: a
// name that is no repository (a tag or digest, an invalid host or path).
func checkImageName(image string, insecure bool) error {
	opts := []name.Option{name.StrictValidation}
	if insecure {
		opts = append(opts, name.Insecure)
	}
	if _, err := name.NewRepository(image, opts...); err != nil {
		return fmt.Errorf("--image %q is not an image repository (no tag or digest): %w", image, err)
	}
	return nil
}

func newCreateImagePolicyCmd(o *createOpts) *cobra.Command {
	var imageRef, semver, alpha, numeric, filterRegex, filterExtract, reflectDigest string
	c := o.leaf("policy", "Create or update an ImagePolicy, which picks the latest image of an ImageRepository",
		"  plumb create image policy podinfo --image-ref=podinfo --select-semver='>=6.0.0 <7.0.0'\n"+
			"  plumb create image policy app --image-ref=app --select-numeric=asc --filter-regex='^main-[a-f0-9]+-(?P<ts>[0-9]+)' --filter-extract='$ts'\n"+
			"  plumb create image policy app --image-ref=app --select-semver=1.x --reflect-digest=Always --interval=10m",
		func(t target) (built, error) {
			if imageRef == "" {
				return built{}, errRequired("image-ref")
			}
			ref, err := parseRef("image-ref", imageRef, imagev1.ImageRepositoryKind, []string{imagev1.ImageRepositoryKind})
			if err != nil {
				return built{}, err
			}
			pol := &imagev1.ImagePolicy{
				ObjectMeta: objectMeta(t),
				Spec: imagev1.ImagePolicySpec{
					ImageRepositoryRef: meta.NamespacedObjectReference{Name: ref.name, Namespace: ref.namespace},
				},
			}
			if pol.Spec.Policy, err = policyChoice(semver, alpha, numeric); err != nil {
				return built{}, err
			}
			if pol.Spec.FilterTags, err = tagFilter(filterRegex, filterExtract); err != nil {
				return built{}, err
			}
			if reflectDigest != "" {
				if err := oneOf("reflect-digest", reflectDigest, []string{string(imagev1.ReflectNever), string(imagev1.ReflectIfNotPresent), string(imagev1.ReflectAlways)}); err != nil {
					return built{}, err
				}
				pol.Spec.DigestReflectionPolicy = imagev1.ReflectionPolicy(reflectDigest)
			}
			// spec.interval is how often an Always policy looks the digest
			// up again; the policy itself follows its ImageRepository.
			if o.intervalSet {
				if pol.Spec.DigestReflectionPolicy != imagev1.ReflectAlways {
					return built{}, errors.New("--interval sets how often the digest is looked up again: it needs --reflect-digest=Always")
				}
				pol.Spec.Interval = &metav1.Duration{Duration: o.interval}
			}
			return built{objs: []client.Object{pol}, wait: imagePolicyKind}, nil
		})
	f := c.Flags()
	f.StringVar(&imageRef, "image-ref", "", "ImageRepository whose tags the policy picks from, <name>[.<namespace>].")
	f.StringVar(&semver, "select-semver", "", "Pick the highest tag within a semver range, e.g. '1.x' or '>=6.0.0 <7.0.0'.")
	f.StringVar(&alpha, "select-alpha", "", "Pick by alphabetical order: asc (the last) or desc (the first).")
	f.StringVar(&numeric, "select-numeric", "", "Pick by numerical order: asc (the highest) or desc (the lowest).")
	f.StringVar(&filterRegex, "filter-regex", "", "Regular expression (Go's syntax) a tag must match to be considered.")
	f.StringVar(&filterExtract, "filter-extract", "", "What of the tag is ordered, from --filter-regex's groups, e.g. '$ts'.")
	f.StringVar(&reflectDigest, "reflect-digest", "", "When the chosen tag's digest is looked up: Never, IfNotPresent or Always (then every --interval).")
	return c
}

// policyChoice is spec.policy from the one --select-* flag given.
func policyChoice(semver, alpha, numeric string) (imagev1.ImagePolicyChoice, error) {
	var c imagev1.ImagePolicyChoice
	given := 0
	for _, v := range []string{semver, alpha, numeric} {
		if v != "" {
			given++
		}
	}
	switch {
	case given == 0:
		return c, errors.New("a policy is required: give --select-semver, --select-alpha or --select-numeric")
	case given > 1:
		return c, errors.New("give one of --select-semver, --select-alpha and --select-numeric")
	case semver != "":
		c.SemVer = &imagev1.SemVerPolicy{Range: semver}
	case alpha != "":
		if err := oneOf("select-alpha", alpha, []string{imagev1.OrderAsc, imagev1.OrderDesc}); err != nil {
			return c, err
		}
		c.Alphabetical = &imagev1.AlphabeticalPolicy{Order: alpha}
	default:
		if err := oneOf("select-numeric", numeric, []string{imagev1.OrderAsc, imagev1.OrderDesc}); err != nil {
			return c, err
		}
		c.Numerical = &imagev1.NumericalPolicy{Order: numeric}
	}
	return c, nil
}

// extractRefRE finds the group references of an extract template, as
// regexp.Expand reads them: $name, ${name}, $1 ($$ is a dollar).
var extractRefRE = regexp.MustCompile(`\$(\$|\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))`)

// tagFilter is spec.filterTags from --filter-regex and --filter-extract:
// the pattern must compile, and the extract name only its groups (Go would
// expand another to nothing, and every tag would order the same).
func tagFilter(pattern, extract string) (*imagev1.TagFilter, error) {
	if pattern == "" {
		if extract != "" {
			return nil, errors.New("--filter-extract needs --filter-regex, whose groups it names")
		}
		return nil, nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("--filter-regex %q: %w", pattern, err)
	}
	for _, m := range extractRefRE.FindAllStringSubmatch(extract, -1) {
		group := m[2] + m[3]
		if m[1] == "$" {
			continue
		}
		if n, err := strconv.Atoi(group); err == nil {
			if n > re.NumSubexp() {
				return nil, fmt.Errorf("--filter-extract %q: --filter-regex has no group %d", extract, n)
			}
			continue
		}
		if re.SubexpIndex(group) < 0 {
			return nil, fmt.Errorf("--filter-extract %q: --filter-regex has no group named %q", extract, group)
		}
	}
	return &imagev1.TagFilter{Pattern: pattern, Extract: extract}, nil
}

func newCreateImageUpdateCmd(o *createOpts) *cobra.Command {
	var repoRef, repoNamespace, path, checkoutBranch, pushBranch, commitTemplate, authorName, authorEmail, signingKeySecret, signingKeyType string
	c := o.leaf("update", "Create or update an ImageUpdateAutomation, which commits the policies' images to Git",
		"  plumb create image update flux-system --git-repo-ref=flux-system --git-repo-path=./clusters/my-cluster \\\n"+
			"    --checkout-branch=main --push-branch=image-updates --author-name=plumb --author-email=plumb@example.com \\\n"+
			"    --commit-template='{{range .Changed.Changes}}{{print .OldValue}} -> {{println .NewValue}}{{end}}'",
		func(t target) (built, error) {
			switch {
			case repoRef == "":
				return built{}, errRequired("git-repo-ref")
			case checkoutBranch == "":
				return built{}, errRequired("checkout-branch")
			case authorName == "":
				return built{}, errRequired("author-name")
			case authorEmail == "":
				return built{}, errRequired("author-email")
			case signingKeyType != "" && signingKeySecret == "":
				return built{}, fmt.Errorf("--signing-key-type needs --signing-key-secret")
			case signingKeyType != "" && signingKeyType != string(imagev1.SigningKeyTypeGPG) && signingKeyType != string(imagev1.SigningKeyTypeSSH):
				return built{}, fmt.Errorf("--signing-key-type %q: use one of gpg, ssh", signingKeyType)
			}
			if commitTemplate != "" {
				// image-controller's own check: a template it would
				// stall on is refused now.
				if _, err := imageupdate.ParseMessageTemplate(commitTemplate); err != nil {
					return built{}, fmt.Errorf("--commit-template: %w", err)
				}
			}
			auto := &imagev1.ImageUpdateAutomation{
				ObjectMeta: objectMeta(t),
				Spec: imagev1.ImageUpdateAutomationSpec{
					SourceRef: imagev1.GitSourceReference{Kind: sourcev1.GitRepositoryKind, Name: repoRef, Namespace: repoNamespace},
					Interval:  metav1.Duration{Duration: o.interval},
					Git: imagev1.GitSpec{
						Checkout: &imagev1.GitCheckoutSpec{Ref: imagev1.GitCheckoutRef{Branch: checkoutBranch}},
						Commit: imagev1.CommitSpec{
							Author:          imagev1.CommitUser{Name: authorName, Email: authorEmail},
							MessageTemplate: commitTemplate,
						},
					},
				},
			}
			if pushBranch != "" {
				auto.Spec.Git.Push = &imagev1.PushSpec{Branch: pushBranch}
			}
			if path != "" {
				auto.Spec.Update = &imagev1.UpdateStrategy{Strategy: imagev1.UpdateStrategySetters, Path: path}
			}
			if signingKeySecret != "" {
				auto.Spec.Git.Commit.SigningKey = &imagev1.SigningKey{SecretRef: meta.LocalObjectReference{Name: signingKeySecret},
					Type: imagev1.SigningKeyType(signingKeyType)}
			}
			return built{objs: []client.Object{auto}, wait: imageUpdateKind}, nil
		})
	f := c.Flags()
	f.StringVar(&repoRef, "git-repo-ref", "", "GitRepository to commit to, with its credentials.")
	f.StringVar(&repoNamespace, "git-repo-namespace", "", "Namespace of the GitRepository; the automation's when not given.")
	f.StringVar(&path, "git-repo-path", "", "Folder of the repository whose manifests' markers are updated; the whole repository when not given.")
	f.StringVar(&checkoutBranch, "checkout-branch", "", "Branch to check out and commit on.")
	f.StringVar(&pushBranch, "push-branch", "", "Branch to push the commit to, e.g. one to review; the checkout branch when not given.")
	f.StringVar(&commitTemplate, "commit-template", "", "Go template of the commit message over the changed images; image-controller's default when not given.")
	f.StringVar(&authorName, "author-name", "", "Name of the commits' author.")
	f.StringVar(&authorEmail, "author-email", "", "Email of the commits' author.")
	f.StringVar(&signingKeySecret, "signing-key-secret", "", "Secret with the key to sign the commits with: an OpenPGP key (git.asc, and passphrase when it has one), or with --signing-key-type=ssh an SSH key (identity, and password).")
	f.StringVar(&signingKeyType, "signing-key-type", "", "The signing key's format: gpg (the default; git.asc, and passphrase) or ssh (identity, and password when it has one).")
	return c
}
