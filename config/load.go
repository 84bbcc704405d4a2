package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Load reads the YAML configuration file at path, decodes it strictly,
// expands ${ENV} references, applies defaults and inheritance, resolves
// relative paths against the file's directory and validates the result.
//
// Config.Dir is set to the absolute directory of path. Errors name the file
// as given and the line: `kgsync.yaml:12: unknown key "chunkng" in
// pipelines[0] (did you mean "chunking"?)`; all problems found are reported
// at once (errors.Join). On error the returned Config is nil.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", path, err)
	}
	return parse(data, filepath.Dir(abs), path, os.LookupEnv)
}

// Parse is Load for a configuration already in memory: dir plays the role of
// the file's directory (relative paths are joined to it; "" leaves them
// relative to the working directory) and errors name lines as "line 12: ...".
//
// Steps, in order:
//  1. YAML is parsed into a node tree; one document only.
//  2. The tree is decoded strictly: unknown or duplicate keys, wrong kinds
//     and unparsable values are errors naming line and key path. Sections
//     start from their defaults, so absent keys keep them.
//  3. ${VAR}, ${VAR:-default} and $$ are expanded in each scalar value as
//     it is decoded (never in keys, never in the raw text); an unset
//     variable without default is an error naming the key path.
//  4. Defaults that depend on other keys are filled; each pipeline without
//     its own sink, embedder or chunking gets a copy of the top-level one
//     (or the default), so every pipeline has non-nil Sink, Embedder and
//     Chunking.
//  5. state.path, sink.cypherl.dir and files.root are resolved against dir.
//  6. Validate runs.
func Parse(data []byte, dir string) (*Config, error) {
	return parse(data, dir, "", os.LookupEnv)
}

// yamlLineErr matches yaml.v3 syntax errors, "yaml: line 3: did not find ...".
var yamlLineErr = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func parse(data []byte, dir, name string, lookup func(string) (string, bool)) (*Config, error) {
	src := &source{name: name, lines: map[string]int{}}
	root, err := parseYAML(data)
	if err != nil {
		msg := err.Error()
		if m := yamlLineErr.FindStringSubmatch(msg); m != nil {
			msg = name + ":" + m[1] + ": " + m[2]
			if name == "" {
				msg = "line " + m[1] + ": " + m[2]
			}
		} else if name != "" {
			msg = name + ": " + strings.TrimPrefix(msg, "yaml: ")
		}
		return nil, errors.New(msg)
	}

	c := &Config{Dir: dir, src: src}
	c.setDefaults()
	d := &decoder{src: src, lookup: lookup, budget: maxNodes, active: map[*yaml.Node]bool{}}
	if root != nil {
		d.decode(root, reflect.ValueOf(c).Elem(), "")
	}
	if len(d.errs) > 0 {
		return nil, errors.Join(d.errs...)
	}

	c.complete()
	c.State.Path = c.resolve(c.State.Path)
	c.Assistant.Playbook = c.resolve(c.Assistant.Playbook)
	if c.Sink != nil {
		c.resolveSink(c.Sink)
	}
	for i := range c.Pipelines {
		c.Pipelines[i].complete(c)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// parseYAML returns the root node of the single document in data, or nil
// for an empty document.
func parseYAML(data []byte) (root *yaml.Node, err error) {
	defer func() {
		// yaml.v3 re-panics on internal errors it does not expect; a config
		// file must never crash the daemon.
		if r := recover(); r != nil {
			root, err = nil, fmt.Errorf("yaml: cannot parse: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return nil, nil
	case err != nil:
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("yaml: line %d: a second YAML document is not allowed; keep one configuration per file", extra.Line)
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0], nil
	}
	return nil, nil
}
