package controller

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/artifact"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/source-controller/internal/git"
)

// includeIndexKey indexes GitRepositories by the names they include, so
// that a new artifact of one enqueues its includers.
const includeIndexKey = "spec.include.repository"

// maxIncludeGraph bounds the GitRepositories read while looking for a
// cycle through spec.include.
const maxIncludeGraph = 64

// includedNames is the index function of includeIndexKey.
func includedNames(o client.Object) []string {
	g, ok := o.(*sourcev1.GitRepository)
	if !ok {
		return nil
	}
	names := make([]string, 0, len(g.Spec.Include))
	for _, in := range g.Spec.Include {
		names = append(names, in.GitRepositoryRef.Name)
	}
	return names
}

// includedArtifactChanged passes the events of a GitRepository that change
// what its includers copy: a new artifact (revision or digest), and its
// deletion, which its includers must report.
type includedArtifactChanged struct{ predicate.Funcs }

func (includedArtifactChanged) Create(e event.CreateEvent) bool {
	g, ok := e.Object.(*sourcev1.GitRepository)
	return ok && g.Status.Artifact != nil
}

func (includedArtifactChanged) Update(e event.UpdateEvent) bool {
	o, okOld := e.ObjectOld.(*sourcev1.GitRepository)
	n, okNew := e.ObjectNew.(*sourcev1.GitRepository)
	if !okOld || !okNew || n.Status.Artifact == nil {
		return false
	}
	return !sameRevisionAndDigest(o.Status.Artifact, n.Status.Artifact)
}

func (includedArtifactChanged) Delete(event.DeleteEvent) bool { return true }

// reconcileIncludes reads, for spec.include, the artifact of every included
// GitRepository (in the same namespace) into st.includes, in the order of
// spec.include, before the source step decides whether anything changed.
// Sets IncludeUnavailable: True with IncludeNotFound (the GitRepository does
// not exist), NoIncludedArtifact (it has no artifact yet) or IncludeFailed
// (the includes form a cycle), all retried, and also re-run when an
// included GitRepository gets a new artifact (the watch of SetupWithManager);
// deleted once all are available. An included GitRepository need not be
// Ready: the artifact it serves is what its own consumers get too.
func (r *GitRepositoryReconciler) reconcileIncludes(ctx context.Context, obj *sourcev1.GitRepository, st *state) error {
	st.includes = nil
	if len(obj.Spec.Include) == 0 {
		conditions.Delete(obj, sourcev1.IncludeUnavailableCondition)
		return nil
	}
	unavailable := func(reason string, err error) error {
		conditions.MarkTrue(obj, sourcev1.IncludeUnavailableCondition, reason, "%s", err.Error())
		return plumbreconcile.Failed(reason, err)
	}
	if err := r.includeCycle(ctx, obj); err != nil {
		return unavailable(sourcev1.IncludeFailedReason, err)
	}
	for _, in := range obj.Spec.Include {
		if err := checkIncludePaths(in); err != nil {
			conditions.MarkTrue(obj, sourcev1.IncludeUnavailableCondition, meta.InvalidSpecReason, "%s", err.Error())
			return plumbreconcile.Stalled(meta.InvalidSpecReason, err)
		}
		var dep sourcev1.GitRepository
		name := in.GitRepositoryRef.Name
		if err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: name}, &dep); err != nil {
			if apierrors.IsNotFound(err) {
				return unavailable(sourcev1.IncludeNotFoundReason, fmt.Errorf("spec.include: GitRepository %s/%s not found", obj.Namespace, name))
			}
			return fmt.Errorf("reading the included GitRepository %s/%s: %w", obj.Namespace, name, err)
		}
		if dep.Status.Artifact == nil {
			return unavailable(sourcev1.NoIncludedArtifactReason, fmt.Errorf("spec.include: GitRepository %s/%s has no artifact yet", obj.Namespace, name))
		}
		// The path comes from the other object's status, which is not
		// ours to trust: it must name a file of that object's own folder.
		dir := gitRepositoryRef(&dep).Dir() + "/"
		if p := path.Clean("/" + dep.Status.Artifact.Path)[1:]; !strings.HasPrefix(p, dir) || strings.Contains(p[len(dir):], "/") {
			return unavailable(sourcev1.NoIncludedArtifactReason, fmt.Errorf("spec.include: GitRepository %s/%s has no artifact of its own (status.artifact.path %q)", obj.Namespace, name, dep.Status.Artifact.Path))
		}
		st.includes = append(st.includes, dep.Status.Artifact.DeepCopy())
	}
	conditions.Delete(obj, sourcev1.IncludeUnavailableCondition)
	return nil
}

// includeCycle fails when obj is reached again through the spec.include of
// the GitRepositories it includes: each artifact would then hold the other,
// every new one would trigger a reconcile of the other, and the artifacts
// would grow with each round. At most maxIncludeGraph objects are read.
func (r *GitRepositoryReconciler) includeCycle(ctx context.Context, obj *sourcev1.GitRepository) error {
	seen := map[string]bool{}
	var visit func(name string, chain []string) error
	visit = func(name string, chain []string) error {
		chain = append(chain, name)
		if name == obj.Name {
			return fmt.Errorf("spec.include forms a cycle: %s", strings.Join(chain, " includes "))
		}
		if seen[name] {
			return nil
		}
		seen[name] = true
		if len(seen) > maxIncludeGraph {
			return fmt.Errorf("spec.include reaches more than %d GitRepositories", maxIncludeGraph)
		}
		var dep sourcev1.GitRepository
		if err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: name}, &dep); err != nil {
			return client.IgnoreNotFound(err)
		}
		for _, in := range dep.Spec.Include {
			if err := visit(in.GitRepositoryRef.Name, chain); err != nil {
				return err
			}
		}
		return nil
	}
	for _, in := range obj.Spec.Include {
		if err := visit(in.GitRepositoryRef.Name, []string{obj.Name}); err != nil {
			return err
		}
	}
	return nil
}

// checkIncludePaths refuses what the CRD's rules let through but the copy
// cannot honour: a toPath of the root (it would replace the whole checkout)
// or inside .git, and a path climbing out (if the CRD's rules were
// bypassed).
func checkIncludePaths(in sourcev1.GitRepositoryInclude) error {
	for _, p := range []struct{ field, value string }{{"fromPath", in.GetFromPath()}, {"toPath", in.GetToPath()}} {
		if clean := path.Clean(p.value); strings.HasPrefix(p.value, "/") || clean == ".." || strings.HasPrefix(clean, "../") {
			return fmt.Errorf("spec.include %s: %s %q leaves the artifact's root", in.GitRepositoryRef.Name, p.field, p.value)
		}
	}
	to := path.Clean(in.GetToPath())
	if to == "." {
		return fmt.Errorf("spec.include %s: toPath %q is the artifact's root; name a folder", in.GitRepositoryRef.Name, in.GetToPath())
	}
	if first, _, _ := strings.Cut(to, "/"); first == ".git" {
		return fmt.Errorf("spec.include %s: toPath %q is inside .git, which is never packed", in.GitRepositoryRef.Name, in.GetToPath())
	}
	return nil
}

// copyIncludes copies, into the checkout, the fromPath folder of every
// included artifact to its toPath, replacing what the checkout has there.
// The artifacts are read from this controller's own storage, the files the
// included objects' status points to, each checked against its digest
// before it is extracted (pkg/artifact). Their content together may take at
// most --max-repository-size bytes, and each at most pkg/artifact's default
// number of files. Errors are IncludeFailed.
func (r *GitRepositoryReconciler) copyIncludes(obj *sourcev1.GitRepository, st *state) error {
	limit := r.MaxRepositorySize
	if limit <= 0 {
		limit = git.DefaultMaxSize
	}
	var used int64
	for i, in := range obj.Spec.Include {
		a := st.includes[i]
		fail := func(err error) error {
			return plumbreconcile.Failed(sourcev1.IncludeFailedReason,
				fmt.Errorf("spec.include %s (revision %s): %w", in.GitRepositoryRef.Name, a.Revision, err))
		}
		if limit-used <= 0 {
			return fail(fmt.Errorf("the included content passes the limit of %d bytes (--max-repository-size)", limit))
		}
		extracted := filepath.Join(st.tmp, fmt.Sprintf("include-%d", i))
		// The archive and its content both count against what is left;
		// the number of files keeps pkg/artifact's default bound.
		err := artifact.ExtractFile(r.Storage.LocalPath(a.Path), a.Digest, extracted,
			artifact.Limits{MaxArchiveBytes: limit - used, MaxExtractedBytes: limit - used})
		if errors.Is(err, artifact.ErrTooLarge) {
			return fail(fmt.Errorf("the included content passes the limit of %d bytes (--max-repository-size): %w", limit, err))
		}
		if err != nil {
			return fail(fmt.Errorf("reading the included artifact: %w", err))
		}
		from, err := realDir(extracted, in.GetFromPath(), false)
		if err != nil {
			return fail(fmt.Errorf("fromPath %q: %w", in.GetFromPath(), err))
		}
		n, err := treeSize(from)
		if err != nil {
			return fail(err)
		}
		used += n
		to, err := realDir(st.checkout, path.Dir(path.Clean(in.GetToPath())), true)
		if err != nil {
			return fail(fmt.Errorf("toPath %q: %w", in.GetToPath(), err))
		}
		dst := filepath.Join(to, path.Base(path.Clean(in.GetToPath())))
		// RemoveAll removes a link, not what it points to, and never
		// follows the links inside a folder.
		if err := os.RemoveAll(dst); err != nil {
			return fail(err)
		}
		if err := os.Rename(from, dst); err != nil {
			return fail(err)
		}
		// What fromPath left out goes now, not at the end of the
		// reconcile: the disk holds the copied content (at most the
		// limit) and one artifact being unpacked (at most what is left
		// of it), whatever the number of includes.
		if err := os.RemoveAll(extracted); err != nil {
			return fail(err)
		}
	}
	return nil
}

// realDir returns root/rel after checking that every element of rel is a
// real folder (not a link) under root. With create, missing folders are
// made and links or files in the way are replaced by folders (links are
// never packed anyway), so that nothing written there lands outside root.
func realDir(root, rel string, create bool) (string, error) {
	cur := root
	for _, el := range strings.Split(path.Clean("/" + rel)[1:], "/") {
		if el == "" {
			continue
		}
		cur = filepath.Join(cur, el)
		fi, err := os.Lstat(cur)
		switch {
		case err == nil && fi.IsDir():
			continue
		case !create && err == nil:
			return "", fmt.Errorf("%s is not a folder", el)
		case !create:
			return "", errors.New("no such folder in the artifact")
		case err == nil:
			if err := os.Remove(cur); err != nil {
				return "", err
			}
		case !errors.Is(err, fs.ErrNotExist):
			return "", err
		}
		if err := os.Mkdir(cur, 0o755); err != nil {
			return "", err
		}
	}
	return cur, nil
}

// treeSize sums the sizes of the regular files under dir.
func treeSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n += fi.Size()
		return nil
	})
	return n, err
}

// includesChanged reports whether the includes differ from those
// status.artifact was made with: another spec.include, or an included
// artifact with another revision or digest.
func includesChanged(obj *sourcev1.GitRepository, includes []*meta.Artifact) bool {
	if !equality.Semantic.DeepEqual(obj.Spec.Include, obj.Status.ObservedInclude) || len(includes) != len(obj.Status.IncludedArtifacts) {
		return true
	}
	for i, a := range includes {
		if !sameRevisionAndDigest(obj.Status.IncludedArtifacts[i], a) {
			return true
		}
	}
	return false
}
