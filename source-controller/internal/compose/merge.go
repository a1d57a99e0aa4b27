package compose

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	yaml "go.yaml.in/yaml/v3"
)

// merge merges the YAML map in the file src into the one at the artifact's
// dst (target on disk, prevSize its size), as Helm merges values files: a
// key's map value merges into the map there, any other value replaces
// what is there. Both must be YAML maps (or empty). YAML 1.2 (yaml/v3), so
// a key such as "y" or "on" stays a string and is not read as a boolean.
func (o *Output) merge(src, target, dst string, prevSize int64) error {
	limit := o.limits.MaxMergeBytes
	if limit <= 0 {
		limit = DefaultMaxMergeBytes
	}
	base, err := readMap(target, limit)
	if err != nil {
		return fmt.Errorf("merging into %s: %w", dst, err)
	}
	over, err := readMap(src, limit)
	if err != nil {
		return fmt.Errorf("merging into %s: %w", dst, err)
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(mergeMaps(base, over)); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	if err := o.account(dst, int64(out.Len()), prevSize, true); err != nil {
		return err
	}
	return os.WriteFile(target, out.Bytes(), 0o644)
}

// readMap parses the YAML map in the file name, refusing a file over max
// bytes before reading it.
func readMap(name string, max int64) (map[string]any, error) {
	info, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if info.Size() > max {
		return nil, fmt.Errorf("%w: %s is over %d bytes, the most a Merge reads", ErrTooLarge, filepath.Base(name), max)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s is not a YAML map: %w", filepath.Base(name), err)
	}
	return m, nil
}

// mergeMaps is Helm's values merge (chartutil.MergeTables' rule): over's
// maps merge into base's, over's other values win.
func mergeMaps(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if vm, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(bm, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}
