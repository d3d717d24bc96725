package helm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// The schemas the rendered manifests are validated against come from the
// Go module proxy, like Helm itself: the OpenAPI document Kubernetes
// publishes for the release whose API types go.mod uses (k8s.io/api
// v0.37.2 is Kubernetes v1.37.2), and the ServiceMonitor CRD as the
// Prometheus Operator ships it.
const (
	kubernetesModule  = "k8s.io/kubernetes@v1.37.2"
	kubernetesSwagger = "api/openapi-spec/swagger.json"
	operatorModule    = "github.com/prometheus-operator/prometheus-operator@v0.85.0"
	serviceMonitorCRD = "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"
)

// TestHelmTemplateSchemas validates every rendered manifest against the
// published schemas, strictly as kubeconform -strict does: required
// fields, types and formats, and no field the schema does not name (the API
// server would reject it for built-in kinds and silently prune it for a
// CRD). Strict decoding into the Go types (TestHelmTemplate) catches
// unknown and mistyped fields but not a missing required one.
func TestHelmTemplateSchemas(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads the Kubernetes OpenAPI document from the Go module proxy")
	}
	v := newSchemaValidator(t)
	docs, err := render(t, ciValues(t))
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range docs {
		if err := v.validate(doc); err != nil {
			t.Errorf("%s: %v\n%s", name, err, doc)
		}
	}

	// The validator refuses what it should, so the loop above can fail.
	for _, c := range []struct {
		name, doc, from, to, want string
	}{
		{"container without a name", "Deployment/rel-sluice", "- name: sluice\n          image:", "- image:", "name"},
		{"misspelt field", "Deployment/rel-sluice", "replicas:", "replica:", "replica"},
		{"wrong type", "Service/rel-sluice", "port: 8080", "port: eighty", "integer"},
		{"misspelt CRD field", "ServiceMonitor/rel-sluice", "path: /metrics", "pth: /metrics", "pth"},
	} {
		doc := string(docs[c.doc])
		if !strings.Contains(doc, c.from) {
			t.Fatalf("%s: %s has no %q to change:\n%s", c.name, c.doc, c.from, doc)
		}
		bad := strings.Replace(doc, c.from, c.to, 1)
		err := v.validate([]byte(bad))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error about %q", c.name, err, c.want)
		}
	}
}

// schemaValidator holds the compiled schema of each kind by
// apiVersion/kind.
type schemaValidator struct {
	c     *jsonschema.Compiler
	defs  map[string]string // "apps/v1/Deployment" -> schema URL
	cache map[string]*jsonschema.Schema
}

func newSchemaValidator(t *testing.T) *schemaValidator {
	t.Helper()
	v := &schemaValidator{c: jsonschema.NewCompiler(), defs: map[string]string{}, cache: map[string]*jsonschema.Schema{}}
	v.c.DefaultDraft(jsonschema.Draft4)

	// Kubernetes: Swagger 2.0, whose definitions are JSON Schema draft 4.
	raw, err := os.ReadFile(filepath.Join(moduleDir(t, kubernetesModule), kubernetesSwagger))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defs := doc.(map[string]any)["definitions"].(map[string]any)
	// What the API server accepts for these, which the document states
	// only as a format of a string.
	defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}
	defs["io.k8s.apimachinery.pkg.api.resource.Quantity"] = map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}}
	for name, d := range defs {
		d := d.(map[string]any)
		strictSchema(d)
		gvks, _ := d["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			g := g.(map[string]any)
			v.defs[apiVersion(g["group"].(string), g["version"].(string))+"/"+g["kind"].(string)] = "file:///kubernetes/swagger.json#/definitions/" + name
		}
	}
	if err := v.c.AddResource("file:///kubernetes/swagger.json", doc); err != nil {
		t.Fatal(err)
	}

	// The ServiceMonitor CRD: its served version's OpenAPI v3 schema.
	crdYAML, err := os.ReadFile(filepath.Join(moduleDir(t, operatorModule), serviceMonitorCRD))
	if err != nil {
		t.Fatal(err)
	}
	crdJSON, err := yaml.YAMLToJSON(crdYAML)
	if err != nil {
		t.Fatal(err)
	}
	crd, err := jsonschema.UnmarshalJSON(bytes.NewReader(crdJSON))
	if err != nil {
		t.Fatal(err)
	}
	spec := crd.(map[string]any)["spec"].(map[string]any)
	group, kind := spec["group"].(string), spec["names"].(map[string]any)["kind"].(string)
	for _, ver := range spec["versions"].([]any) {
		ver := ver.(map[string]any)
		schema := ver["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
		strictTree(schema)
		url := fmt.Sprintf("file:///crd/%s/%s/%s.json", group, ver["name"], kind)
		if err := v.c.AddResource(url, schema); err != nil {
			t.Fatal(err)
		}
		v.defs[group+"/"+ver["name"].(string)+"/"+kind] = url
	}
	return v
}

func apiVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}

// strictSchema forbids members a definition does not name, as
// kubeconform -strict does; maps (additionalProperties set) and
// definitions without properties are left alone.
func strictSchema(s map[string]any) {
	if _, ok := s["properties"]; ok {
		if _, set := s["additionalProperties"]; !set {
			s["additionalProperties"] = false
		}
	}
}

// strictTree is strictSchema on every schema of an inline (CRD) schema,
// except where the CRD keeps unknown fields.
func strictTree(s map[string]any) {
	if s["x-kubernetes-preserve-unknown-fields"] == true {
		return
	}
	strictSchema(s)
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			if p, ok := p.(map[string]any); ok {
				strictTree(p)
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if sub, ok := s[k].(map[string]any); ok {
			strictTree(sub)
		}
	}
	for _, k := range []string{"anyOf", "allOf", "oneOf"} {
		if subs, ok := s[k].([]any); ok {
			for _, sub := range subs {
				if sub, ok := sub.(map[string]any); ok {
					strictTree(sub)
				}
			}
		}
	}
}

// validate checks one rendered manifest against the schema of its kind;
// a kind with no schema is an error.
func (v *schemaValidator) validate(doc []byte) error {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		return err
	}
	var head struct{ APIVersion, Kind string }
	if err := json.Unmarshal(js, &head); err != nil {
		return err
	}
	key := head.APIVersion + "/" + head.Kind
	sch, ok := v.cache[key]
	if !ok {
		url, known := v.defs[key]
		if !known {
			return fmt.Errorf("no schema for %s", key)
		}
		if sch, err = v.c.Compile(url); err != nil {
			return fmt.Errorf("compiling the schema of %s: %w", key, err)
		}
		v.cache[key] = sch
	}
	return sch.Validate(inst)
}

// moduleDir downloads mod (path@version) from the Go module proxy into
// the module cache, outside this module so go.mod is left alone, and
// returns its directory.
func moduleDir(t *testing.T, mod string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", mod)
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	var m struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &m); jerr != nil || m.Dir == "" {
		t.Fatalf("go mod download %s: %v %s %s", mod, err, m.Error, out)
	}
	return m.Dir
}
