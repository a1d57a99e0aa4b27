package render

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"

	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// Objects with metadata.generateName and no name — Argo CD's and Helm's
// hooks, created afresh on every sync — are something kustomize refuses
// ("missing metadata.name"). The sandbox gives each such object a stand-in
// name as kustomize reads its file: the generateName followed by
// generatedMarker and a number unique within the build, so that two hooks
// of one generateName stay two objects. Once kustomize is done (its
// namePrefix and nameSuffix included), finish takes the marker out again:
// the object leaves with the generateName, prefix and suffix applied, and
// no name. sync-controller names the hook for each sync (pkg/plan).

// generatedMarker ends the stand-in name of an object with only a
// generateName. Its dots make it a name no one writes by hand.
const generatedMarker = ".plumb.generated-name."

// generatedName matches the marker and its number within a stand-in name.
var generatedName = regexp.MustCompile(regexp.QuoteMeta(generatedMarker) + `[0-9]+`)

// nameGenerated returns data, a file kustomize reads, with a stand-in
// name given to every object that has a generateName and no name; next
// numbers them. A file without such an object is returned as it is, and
// so is one that is not YAML (kustomize reports that itself).
func nameGenerated(data []byte, next *atomic.Int64) []byte {
	if !bytes.Contains(data, []byte("generateName")) {
		return data
	}
	nodes, err := kio.FromBytes(data)
	if err != nil {
		return data
	}
	changed := false
	for _, n := range nodes {
		if n.GetKind() == "" || n.GetName() != "" {
			continue
		}
		gen, err := n.Pipe(kyaml.Lookup("metadata", "generateName"))
		if err != nil || gen == nil || kyaml.GetValue(gen) == "" {
			continue
		}
		if err := n.SetName(kyaml.GetValue(gen) + generatedMarker + strconv.FormatInt(next.Add(1), 10)); err != nil {
			return data
		}
		changed = true
	}
	if !changed {
		return data
	}
	var out bytes.Buffer
	if err := (kio.ByteWriter{Writer: &out}).Write(nodes); err != nil {
		return data
	}
	return out.Bytes()
}

// restoreGenerateName turns a stand-in name back into a generateName on n:
// the name without its marker (kustomize's prefix and suffix kept) becomes
// metadata.generateName, and metadata.name goes. It reports whether n had
// a stand-in name, and the generateName it now has.
func restoreGenerateName(n *kyaml.RNode) (string, bool, error) {
	name := n.GetName()
	if !strings.Contains(name, generatedMarker) {
		return "", false, nil
	}
	gen := generatedName.ReplaceAllString(name, "")
	meta, err := n.Pipe(kyaml.Lookup("metadata"))
	if err != nil || meta == nil {
		return "", false, fmt.Errorf("reading metadata: %v", err)
	}
	if err := meta.PipeE(kyaml.Clear("name")); err != nil {
		return "", false, err
	}
	if err := meta.PipeE(kyaml.SetField("generateName", kyaml.NewStringRNode(gen))); err != nil {
		return "", false, err
	}
	return gen, true, nil
}
