// helmrender renders a Helm chart's templates the way `helm template` does,
// for a machine without helm: Go's text/template with the Sprig functions
// (the library and version Helm 3 uses) and Helm's own additions (include,
// tpl, required, toYaml, fromYaml, toJson, fromJson). Values are read as
// Helm reads them (YAML through JSON, so numbers are float64), merged with
// each -f file in order (maps merge, everything else replaces), and a
// missing key is an error (helm lint --strict).
//
//	helmrender [-f values.yaml]... [-name R] [-namespace NS] [-notes] CHART_DIR
//
// Prints every rendered non-empty template as `---\n# Source: CHART/templates/F\n...`
// and exits 0; a template error is printed on stderr with exit 1; usage exit 2.
//
// Not Helm: no subcharts, no .Capabilities beyond a fixed version, no
// lookup, no hooks ordering, toYaml by yaml.v3 (same data, formatting may
// differ slightly from sigs.k8s.io/yaml).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"gopkg.in/yaml.v3"
)

type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(s string) error { *f = append(*f, s); return nil }

// readYAML reads YAML as Helm does: through JSON, so that maps have string
// keys and numbers are float64.
func readYAML(path string) (map[string]interface{}, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseYAML(raw)
}

func parseYAML(raw []byte) (map[string]interface{}, error) {
	var v interface{}
	if err := yaml.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	if v == nil {
		return map[string]interface{}{}, nil
	}
	j, err := json.Marshal(jsonable(v))
	if err != nil {
		return nil, err
	}
	out := map[string]interface{}{}
	if err := json.Unmarshal(j, &out); err != nil {
		return nil, fmt.Errorf("not a map at the top: %v", err)
	}
	return out, nil
}

func jsonable(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, x := range t {
			t[k] = jsonable(x)
		}
		return t
	case map[interface{}]interface{}:
		m := map[string]interface{}{}
		for k, x := range t {
			m[fmt.Sprint(k)] = jsonable(x)
		}
		return m
	case []interface{}:
		for i, x := range t {
			t[i] = jsonable(x)
		}
		return t
	}
	return v
}

func merge(dst, src map[string]interface{}) {
	for k, v := range src {
		if sm, ok := v.(map[string]interface{}); ok {
			if dm, ok := dst[k].(map[string]interface{}); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

func toYAML(v interface{}) string {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

type files struct{ dir string }

func (f files) Get(name string) string {
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		return ""
	}
	return string(b)
}

func main() {
	var valueFiles fileList
	flag.Var(&valueFiles, "f", "a values file (repeatable; later wins)")
	name := flag.String("name", "reaper", "release name")
	ns := flag.String("namespace", "default", "release namespace")
	notes := flag.Bool("notes", false, "print the rendered NOTES.txt on stderr")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: helmrender [-f values.yaml]... [-name R] [-namespace NS] CHART_DIR")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), valueFiles, *name, *ns, *notes); err != nil {
		fmt.Fprintln(os.Stderr, "helmrender:", err)
		os.Exit(1)
	}
}

func run(chartDir string, valueFiles []string, name, ns string, notes bool) error {
	meta, err := readYAML(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return fmt.Errorf("Chart.yaml: %w", err)
	}
	values, err := readYAML(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return fmt.Errorf("values.yaml: %w", err)
	}
	for _, f := range valueFiles {
		v, err := readYAML(f)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		merge(values, v)
	}
	chartName, _ := meta["name"].(string)
	chart := map[string]interface{}{}
	for k, v := range meta {
		chart[strings.ToUpper(k[:1])+k[1:]] = v
	}
	top := map[string]interface{}{
		"Values":  values,
		"Chart":   chart,
		"Release": map[string]interface{}{"Name": name, "Namespace": ns, "Service": "Helm", "IsInstall": true, "IsUpgrade": false, "Revision": 1},
		"Files":   files{chartDir},
		"Capabilities": map[string]interface{}{
			"KubeVersion": map[string]interface{}{"Version": "v1.28.0", "Major": "1", "Minor": "28"},
		},
	}

	tdir := filepath.Join(chartDir, "templates")
	entries, err := os.ReadDir(tdir)
	if err != nil {
		return err
	}
	t := template.New("chart").Option("missingkey=error")
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	funcs["toYaml"] = toYAML
	funcs["fromYaml"] = func(s string) map[string]interface{} {
		m, err := parseYAML([]byte(s))
		if err != nil {
			return map[string]interface{}{"Error": err.Error()}
		}
		return m
	}
	funcs["toJson"] = func(v interface{}) string { b, _ := json.Marshal(v); return string(b) }
	funcs["fromJson"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	funcs["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return nil, errors.New(msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return nil, errors.New(msg)
		}
		return v, nil
	}
	funcs["fail"] = func(msg string) (string, error) { return "", errors.New(msg) }
	funcs["include"] = func(string, interface{}) (string, error) { return "", nil }
	funcs["tpl"] = func(string, interface{}) (string, error) { return "", nil }
	funcs["lookup"] = func(...interface{}) map[string]interface{} { return map[string]interface{}{} }
	t.Funcs(funcs)
	// include and tpl need the template set itself.
	t.Funcs(template.FuncMap{
		"include": func(n string, data interface{}) (string, error) {
			var b strings.Builder
			err := t.ExecuteTemplate(&b, n, data)
			return b.String(), err
		},
		"tpl": func(text string, data interface{}) (string, error) {
			c, err := t.Clone()
			if err != nil {
				return "", err
			}
			nt, err := c.New("tpl").Parse(text)
			if err != nil {
				return "", err
			}
			var b strings.Builder
			err = nt.Execute(&b, data)
			return b.String(), err
		},
	})
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		n := e.Name()
		if !strings.HasSuffix(n, ".yaml") && !strings.HasSuffix(n, ".yml") &&
			!strings.HasSuffix(n, ".tpl") && n != "NOTES.txt" {
			continue
		}
		src, err := os.ReadFile(filepath.Join(tdir, n))
		if err != nil {
			return err
		}
		full := chartName + "/templates/" + n
		if _, err := t.New(full).Parse(string(src)); err != nil {
			return err
		}
		names = append(names, n)
	}
	sort.Strings(names)
	var out strings.Builder
	for _, n := range names {
		if strings.HasPrefix(n, "_") {
			continue
		}
		full := chartName + "/templates/" + n
		data := map[string]interface{}{}
		for k, v := range top {
			data[k] = v
		}
		data["Template"] = map[string]interface{}{"Name": full, "BasePath": chartName + "/templates"}
		var b strings.Builder
		if err := t.ExecuteTemplate(&b, full, data); err != nil {
			return err
		}
		text := strings.ReplaceAll(b.String(), "<no value>", "")
		if strings.TrimSpace(text) == "" {
			continue
		}
		if n == "NOTES.txt" {
			if notes {
				fmt.Fprintf(os.Stderr, "%s", text)
			}
			continue
		}
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", full, strings.TrimLeft(text, "\n"))
	}
	fmt.Print(out.String())
	return nil
}
