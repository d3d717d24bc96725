// Package helm tests the Helm chart in ./sluice: helm lint, helm template
// (through Helm's own Go packages, from the Go module proxy), every
// rendered manifest decoded strictly into the Kubernetes API types (an
// unknown or mistyped field fails) and validated against the published
// schemas (Kubernetes' OpenAPI document, the ServiceMonitor CRD), the pod
// hardening the chart promises,
// and the rendered sluice.yaml accepted by `sluice config validate`.
//
// It is a module of its own so that the gateway's module does not carry
// Helm's and Kubernetes' dependencies: cd deploy/helm && go test ./...
package helm

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

const chartDir = "sluice"

func ciValues(t *testing.T) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValuesFile(filepath.Join(chartDir, "ci", "test-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return v.AsMap()
}

func TestHelmLint(t *testing.T) {
	l := action.NewLint()
	l.Strict = true
	res := l.Run([]string{chartDir}, ciValues(t))
	for _, m := range res.Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint: %s", m)
		}
	}
	for _, err := range res.Errors {
		t.Errorf("helm lint: %v", err)
	}
}

// render is `helm template rel sluice -n tools -f ci/test-values.yaml`.
func render(t *testing.T, vals map[string]any) (map[string][]byte, error) {
	t.Helper()
	return renderAs(t, "rel", "tools", vals)
}

// renderAs is render as release name in namespace ns.
func renderAs(t *testing.T, name, ns string, vals map[string]any) (map[string][]byte, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	in := action.NewInstall(&action.Configuration{})
	in.DryRun, in.ClientOnly, in.Replace = true, true, true
	in.ReleaseName, in.Namespace = name, ns
	rel, err := in.Run(ch, vals)
	if err != nil {
		return nil, err
	}
	docs := map[string][]byte{}
	for _, doc := range strings.Split(rel.Manifest, "\n---\n") {
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("rendered manifest is not YAML: %v\n%s", err, doc)
		}
		if meta.Kind == "" {
			continue
		}
		docs[meta.Kind+"/"+meta.Metadata.Name] = []byte(doc)
	}
	return docs, nil
}

func strict[T any](t *testing.T, doc []byte) *T {
	t.Helper()
	v := new(T)
	if err := yaml.UnmarshalStrict(doc, v); err != nil {
		t.Fatalf("%T does not fit the Kubernetes schema: %v\n%s", v, err, doc)
	}
	return v
}

func TestHelmTemplate(t *testing.T) {
	docs, err := render(t, ciValues(t))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for k := range docs {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	want := []string{"ConfigMap/rel-sluice", "Deployment/rel-sluice", "Deployment/rel-sluice-redis", "NetworkPolicy/rel-sluice-redis", "PodDisruptionBudget/rel-sluice",
		"Secret/rel-sluice-admin", "Service/rel-sluice", "Service/rel-sluice-admin", "Service/rel-sluice-redis", "ServiceMonitor/rel-sluice"}
	if strings.Join(kinds, " ") != strings.Join(want, " ") {
		t.Fatalf("rendered %v, want %v", kinds, want)
	}
	for k, doc := range docs {
		switch strings.Split(k, "/")[0] {
		case "Deployment":
			strict[appsv1.Deployment](t, doc)
		case "Service":
			strict[corev1.Service](t, doc)
		case "ConfigMap":
			strict[corev1.ConfigMap](t, doc)
		case "Secret":
			strict[corev1.Secret](t, doc)
		case "PodDisruptionBudget":
			strict[policyv1.PodDisruptionBudget](t, doc)
		case "NetworkPolicy":
			strict[networkingv1.NetworkPolicy](t, doc)
		}
	}

	d := strict[appsv1.Deployment](t, docs["Deployment/rel-sluice"])
	if *d.Spec.Replicas != 3 {
		t.Errorf("replicas %d, want 3", *d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Error("pod may run as root")
	}
	if c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Error("container root filesystem writable or privilege escalation allowed")
	}
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probes on %s and %s", c.LivenessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Path)
	}
	pdb := strict[policyv1.PodDisruptionBudget](t, docs["PodDisruptionBudget/rel-sluice"])
	if pdb.Spec.Selector.MatchLabels["app.kubernetes.io/component"] != "gateway" {
		t.Errorf("PDB selects %v", pdb.Spec.Selector.MatchLabels)
	}
	sm := string(docs["ServiceMonitor/rel-sluice"])
	for _, s := range []string{"apiVersion: monitoring.coreos.com/v1", "port: admin", "path: /metrics", "bearerTokenSecret:"} {
		if !strings.Contains(sm, s) {
			t.Errorf("ServiceMonitor lacks %q:\n%s", s, sm)
		}
	}

	// The rendered sluice.yaml is one the gateway accepts: its file paths
	// moved into a temp dir that holds the secrets the pod would mount.
	cm := strict[corev1.ConfigMap](t, docs["ConfigMap/rel-sluice"])
	cfg := cm.Data["sluice.yaml"]
	for _, s := range []string{"listen: 0.0.0.0:8080", "admin_listen: 0.0.0.0:9090", "redis_url: redis://rel-sluice-redis:6379/0", "rel-sluice.tools.svc.cluster.local", "file: /etc/sluice/keys/agent_keys.json", "${file:/etc/sluice/session/key}", "key_file: /etc/sluice/inventory/key.pem"} {
		if !strings.Contains(cfg, s) {
			t.Errorf("sluice.yaml lacks %q:\n%s", s, cfg)
		}
	}
	if n := strings.Count(cfg, "redis_url: redis://rel-sluice-redis:6379/0"); n != 5 {
		t.Errorf("sluice.yaml has %d redis_url, want 5 (route_memory, approvals, agent_tasks, rate_limits, inventory):\n%s", n, cfg)
	}
	_, inventoryKey, _ := ed25519.GenerateKey(rand.Reader)
	der, err := x509.MarshalPKCS8PrivateKey(inventoryKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for f, content := range map[string]string{"admin/token": "tok", "keys/agent_keys.json": `{"keys":[]}`, "session/key": "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE=", "session-opening/key": "YmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmI=",
		"inventory/key.pem": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o700)
		os.WriteFile(filepath.Join(dir, f), []byte(content), 0o600)
	}
	cfg = strings.ReplaceAll(cfg, "/etc/sluice/", dir+"/")
	cfg = strings.ReplaceAll(cfg, "/var/lib/sluice", filepath.Join(dir, "data"))
	file := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(file, []byte(cfg), 0o600)
	cmd := exec.Command("go", "run", "./cmd/sluice", "config", "validate", file)
	cmd.Dir = filepath.Join("..", "..")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("sluice config validate on the rendered config: %v\n%s\n%s", err, out.String(), cfg)
	}
}

// With the default values the chart wants API keys for the agents: it
// refuses to render rather than deploy a gateway nobody can reach or
// everybody can.
func TestHelmTemplateDefaultsNeedKeys(t *testing.T) {
	_, err := render(t, map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "apiKeys.existingSecret") {
		t.Errorf("default values rendered (%v); want an error naming apiKeys.existingSecret", err)
	}
}
