//lint:file-ignore SA1019 the tests hold our image setting to kustomize's builtin image transformer, which krusty runs
package render

import (
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	kustypes "sigs.k8s.io/kustomize/api/types"
)

// imageValues are image fields' values that kustomize's name matching
// and splitting meet differently: tags, digests of several algorithms,
// registries with ports, empty parts, a dot where a name has another
// character, newlines, non-ASCII, invalid UTF-8, names that only start
// or end like the image's.
var imageValues = []string{
	"nginx", "nginx:1", "nginx:1.2.3", "nginx:{{.Tag}}", "nginx:", "nginx::1", "nginx:1:2",
	"nginx@sha256:" + strings.Repeat("ab", 32), "nginx:1@sha256:00", "nginx@sha256:", "nginx@sha256", "nginx@",
	"nginx@a..b:c", "nginx@a+b_c-d.e:x{y}", "nginx@-a:b", "nginx@a-:b", "nginx@a:b@c", "nginx@x@y:z",
	"nginxx", "ngin", "nginx/sub", "nginx ", " nginx", "NGINX", "nginx\n", "nginx:1\n", "ngïnx", "nginx:ä", "nginx:\xff",
	"docker.io/nginx", "docker.io/nginx:1", "registry.example:5000/nginx:1", "localhost:5000/nginx@sha256:00",
	"localhost:5000/nginx", "registry.example/nginx:2", "registryXexample/nginx", "registry\nexample/nginx", "registryéexample/nginx",
	"registry.example/web", "/nginx:1", ":1", "@sha256:0", "", "busybox", "busybox:1.36-musl", "a.b", "aXb:1", "a\xffb",
}

// imageNames are the images' names: literals, registries with ports,
// dots, a name with a tag, an empty one, and names that are regular
// expressions beyond dots (kustomize's own code sets those).
var imageNames = []string{
	"nginx", "busybox", "registry.example/nginx", "registry.example:5000/nginx", "localhost:5000/nginx", "docker.io/nginx",
	"nginx:1", "", "a.b", "ngin.", ".", "ngin", "ng[i]nx", "nginx*", "ngïnx", "(nginx|busybox)", `nginx\.io`, "nginx$", "^nginx",
}

// imageTags are the changes an image asks, all of kustypes.Image's.
func imageTags() []kustypes.Image {
	var images []kustypes.Image
	changes := []kustypes.Image{
		{NewTag: "2"}, {Digest: "sha256:" + strings.Repeat("0", 64)}, {NewName: "registry.example/web"},
		{NewName: "r.example:5000/n", NewTag: "3"}, {NewTag: "4", Digest: "sha256:11"}, {TagSuffix: "-debug"},
		{NewName: "nginx", TagSuffix: "-s"}, {}, {NewName: "a.b"}, {TagSuffix: "-x", Digest: "sha512:22"},
	}
	for i, name := range imageNames {
		for j := range 3 {
			c := changes[(i+j*3)%len(changes)]
			c.Name = name
			images = append(images, c)
		}
	}
	return images
}

// imageObjects are objects holding each of imageValues at every place
// the image transformer looks — a Pod's and a template's containers and
// init containers, a CronJob's, volumes' image references, containers in
// a ConfigMap's data and in nested lists — in each quoting style, beside
// shapes its walks meet differently (null lists and elements, a scalar
// or a mapping where an image is, aliases, a CRD, comments).
func imageObjects(t *testing.T) []*resource.Resource {
	t.Helper()
	var docs []string
	for i, v := range imageValues {
		q := strconv.Quote(v)
		if strings.Contains(v, "\xff") {
			q = "\"" + strings.ReplaceAll(v, "\xff", "\\xff") + "\""
		}
		single := "'" + strings.ReplaceAll(v, "'", "''") + "'"
		other := imageValues[(i+7)%len(imageValues)]
		oq := strconv.Quote(other)
		if strings.Contains(other, "\xff") || strings.ContainsAny(other, "\n ") || other == "" {
			oq = single
		}
		docs = append(docs,
			"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: "+q+"\n  - name: d\n    image: "+oq+"\n  initContainers: [{name: i, image: "+q+"}]\n  volumes: [{name: v, image: {reference: "+q+"}}]\n",
			"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  template:\n    spec:\n      containers:\n      - {name: c, image: "+single+"}  # the app\n      - null\n      initContainers: null\n      volumes:\n      - {name: v, image: {reference: "+q+", pullPolicy: Always}}\n      - {name: w, image: {reference: null}}\n      - {name: x, image: null}\n",
			"apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: c\nspec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          initContainers:\n          - image: "+q+"\n          containers: ~\n          volumes:\n          - {name: v, image: {reference: "+q+"}}\n",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  nested:\n    a: [{b: {containers: [{image: "+q+"}, {name: x}]}}]\n  initContainers:\n  - image: "+oq+"\n",
			"apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: s\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: "+q+"\n        sidecar:\n          containers: [{image: "+q+"}]\n      volumes: ~\n",
		)
	}
	for _, image := range []string{"123", "1.5", "true", "null", "~", "", "{a: b}", "[nginx]", "!!str nginx", "!custom nginx", "nginx # c", "|\n      nginx:1"} {
		docs = append(docs,
			"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: "+image+"\n",
			"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  volumes:\n  - name: v\n    image:\n      reference: "+image+"\n",
		)
	}
	head := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n"
	for _, spec := range []string{
		"spec:\n  template:\n    spec:\n      containers: &c [{name: c, image: nginx}]\n      initContainers: *c\n",
		"spec:\n  template:\n    spec:\n      containers: [{name: c, image: &i nginx}, {name: d, image: *i}]\n",
		"spec:\n  template:\n    spec:\n      containers: [[{name: c, image: nginx}]]\n",
		"spec:\n  template:\n    spec:\n      containers: [nginx]\n",
		"spec:\n  template:\n    spec:\n      containers: {image: nginx}\n",
		"spec:\n  template:\n    spec:\n      volumes: [{name: v, image: nginx}]\n",
		"spec:\n  template:\n    spec:\n      volumes: [[{name: v, image: {reference: nginx}}]]\n",
		"spec:\n- template: {spec: {containers: [{name: c, image: nginx:1}]}}\n",
		"spec:\n  containers: [{image: nginx}]\n  template: x\n",
		"spec:\n  template: {spec: {containers: null, initContainers: [], volumes: null}}\n",
		"spec:\n  template: {spec: {containers: [{image: nginx}]}, metadata: {containers: [{image: busybox}]}}\n",
	} {
		docs = append(docs, head+spec)
	}
	docs = append(docs,
		"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: c\nspec:\n  containers: [{image: nginx}]\n",
		"apiVersion: v1\nkind: List\nmetadata: x\ncontainers: [{image: nginx}]\n",
	)
	return append(parsedCorpus(docs), overlayCorpus(t)...)
}

// kustomizesImages sets tags on a copy of r as kustomize's image
// transformer does, configured as krusty configures it, on a map of r
// alone.
func kustomizesImageTransform(t *testing.T, r *resource.Resource, tags []kustypes.Image) (*resource.Resource, error) {
	t.Helper()
	c := r.DeepCopy()
	m := resmap.New()
	if err := m.Append(c); err != nil {
		t.Fatal(err)
	}
	for _, tag := range tags {
		p := builtins.NewImageTagTransformerPlugin()
		if !configure(p, struct {
			ImageTag   kustypes.Image
			FieldSpecs []kustypes.FieldSpec
		}{tag, imageFieldSpecs}) {
			t.Fatal("configuring the image transformer")
		}
		if err := p.Transform(m); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Our own image setting (imageSitesOf, then set for each image) leaves
// every node of every object exactly as kustomize's image transformer
// does — kinds, tags, values, styles, comments — and prints the same
// canonical bytes, for every image and every pair of images, wherever it
// says it is sure; it is sure of most objects, and of none kustomize
// refuses.
func TestOwnImagesAreKustomizesFilters(t *testing.T) {
	images := imageTags()
	var runs [][]kustypes.Image
	for i, img := range images {
		tag, ok := imagePlugin(img)
		if !ok {
			t.Fatal("configuring the image transformer")
		}
		images[i] = tag.(*builtins.ImageTagTransformerPlugin).ImageTag
		runs = append(runs, []kustypes.Image{images[i]})
	}
	for i := 0; i < len(images); i += 2 {
		runs = append(runs, []kustypes.Image{images[i], images[(i*7+3)%len(images)]})
	}
	var sure, unsure, refused, changed int
	for _, r := range imageObjects(t) {
		before := r.MustString()
		for _, run := range runs {
			own := true
			for _, img := range run {
				own = own && ownImageName(img.Name)
			}
			if !own {
				// kustomize's own code sets it (TestImageMatchesIsKustomizesExpression
				// holds ownImageName to the expression).
				continue
			}
			want, err := kustomizesImageTransform(t, r, run)
			ours := r.DeepCopy()
			meta, merr := ours.GetMeta()
			sites, ok := imageSitesOf(ours.YNode(), meta)
			if merr != nil || !ok {
				unsure++
				continue
			}
			sure++
			if err != nil {
				t.Fatalf("sure of an object kustomize refuses (%v) for %+v:\n%s", err, run, before)
			}
			for _, img := range run {
				sites.set(img)
			}
			if !reflect.DeepEqual(ours.YNode(), want.YNode()) {
				t.Fatalf("images %+v on\n%s\nkustomize:\n%s\nours:\n%s", run, before, want.MustString(), ours.MustString())
			}
			wantText, werr := canonicalYAML(&want.RNode)
			oursText, oerr := canonicalYAML(&ours.RNode)
			if wantText != oursText || (werr == nil) != (oerr == nil) {
				t.Fatalf("images %+v on\n%s\nprint differently:\nkustomize: %q %v\nours: %q %v", run, before, wantText, werr, oursText, oerr)
			}
			if want.MustString() != before {
				changed++
			}
		}
		for _, run := range runs[:len(images)] {
			if _, err := kustomizesImageTransform(t, r, run); err != nil {
				refused++
				break
			}
		}
	}
	t.Logf("sure %d, unsure %d, changed %d, objects kustomize refuses %d", sure, unsure, changed, refused)
	if sure < 10*unsure || changed < 2000 || refused < 5 {
		t.Fatalf("sure %d times, unsure %d, changed %d, refused objects %d: want sure ten times as often as not, 2,000 changes and 5 refusals", sure, unsure, changed, refused)
	}
}

// imageMatches is kustomize's regular expression for every name
// ownImageName takes, on every value, and on names and values made of
// the characters that matter.
func TestImageMatchesIsKustomizesExpression(t *testing.T) {
	names := append([]string{}, imageNames...)
	values := append([]string{}, imageValues...)
	alphabet := []string{"a", ".", ":", "@", "/", "1", "-", "+", "_", "{", "\n", "é", "\xff"}
	for _, a := range alphabet {
		for _, b := range alphabet {
			names = append(names, "a"+a+b, a+b)
			for _, c := range alphabet {
				values = append(values, "a"+a+b+c, a+b+c+"a", "aa"+a+"b"+b+c)
			}
		}
	}
	var took int
	for _, name := range names {
		if !ownImageName(name) {
			continue
		}
		took++
		re := regexp.MustCompile("^" + name + "(:[a-zA-Z0-9_.{}-]*)?(@[a-zA-Z0-9]+([.+_-][a-zA-Z0-9]+)*:[a-zA-Z0-9_.{}-]*)?$")
		for _, v := range values {
			if got, want := imageMatches(v, name), re.MatchString(v); got != want {
				t.Errorf("imageMatches(%q, %q) = %v, kustomize's expression says %v", v, name, got, want)
			}
		}
	}
	if took < 100 {
		t.Fatalf("ownImageName took %d names, want 100", took)
	}
}

// FuzzOwnImages compares our image setting with kustomize's image
// transformer on a Pod whose container, init container and volume hold a
// fuzzed image, for a fuzzed image name, new name, tag, digest and tag
// suffix.
func FuzzOwnImages(f *testing.F) {
	f.Add("registry.example:5000/nginx:1@sha256:00", "registry.example:5000/nginx", "", "2", "", "")
	f.Add("nginx@a+b:c", "nginx", "r.example/n", "", "sha512:1", "")
	f.Add("a.b:1", "a.b", "", "", "", "-x")
	f.Fuzz(func(t *testing.T, value, name, newName, newTag, digest string, suffix string) {
		doc := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: " + strconv.Quote(value) +
			"\n  initContainers: [{image: " + strconv.Quote(value) + "}]\n  volumes: [{name: v, image: {reference: " + strconv.Quote(value) + "}}]\n"
		rs, err := resourceFactory.SliceFromBytes([]byte(doc))
		if err != nil || len(rs) != 1 {
			return
		}
		p, ok := imagePlugin(kustypes.Image{Name: name, NewName: newName, NewTag: newTag, Digest: digest, TagSuffix: suffix})
		if !ok {
			return
		}
		img := p.(*builtins.ImageTagTransformerPlugin).ImageTag
		if !ownImageName(img.Name) {
			return
		}
		want, err := kustomizesImageTransform(t, rs[0], []kustypes.Image{img})
		ours := rs[0].DeepCopy()
		meta, merr := ours.GetMeta()
		sites, sure := imageSitesOf(ours.YNode(), meta)
		if merr != nil || !sure {
			t.Fatalf("not sure of a Pod: %v", merr)
		}
		if err != nil {
			t.Fatalf("sure of a Pod kustomize refuses: %v", err)
		}
		sites.set(img)
		if !reflect.DeepEqual(ours.YNode(), want.YNode()) {
			t.Fatalf("image %+v on %q:\nkustomize:\n%s\nours:\n%s", img, value, want.MustString(), ours.MustString())
		}
	})
}
