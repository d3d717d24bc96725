package helm

import (
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
)

// notes renders NOTES.txt as helm install (upgrade false) or helm
// upgrade prints it.
func notes(t *testing.T, upgrade bool, vals map[string]any) string {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	opts := chartutil.ReleaseOptions{Name: "rel", Namespace: "tools", IsInstall: !upgrade, IsUpgrade: upgrade}
	rv, err := chartutil.ToRenderValues(ch, vals, opts, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatal(err)
	}
	return out["sluice/templates/NOTES.txt"]
}

// TestHelmUpgradeWarnsOfNewRedisPrefixes: the chart keeps each release's
// Redis keys under sluice:<namespace>/<release>:. A release an earlier
// chart installed kept them under the gateway's defaults, and helm
// upgrade moved it to the new prefixes in silence: its route memory
// forgotten (a sink that an agent's source call before the upgrade
// closed was allowed), its held calls never approved, its inventory pins
// gone (the next listing pinned whatever the upstream served, a drifted
// tool that was blocked among it), its rate limits spent anew; and during
// the rollout old and new pods kept apart. helm upgrade now says so, and
// what to set, while the config sets no key_prefix of its own.
func TestHelmUpgradeWarnsOfNewRedisPrefixes(t *testing.T) {
	ext := map[string]any{"redis.enabled": false, "redis.url": "redis://redis.infra:6379/0"}
	up := notes(t, true, valuesWith(t, ext))
	for _, want := range []string{"sluice:mem:", "{sluice:approvals}:", "{sluice:inventory}:", "sluice:ratelimit:", "sluice:a2a:task:", "route memory"} {
		if !strings.Contains(up, want) {
			t.Errorf("helm upgrade with Redis: NOTES do not name %q:\n%s", want, up)
		}
	}
	if in := notes(t, false, valuesWith(t, ext)); strings.Contains(in, "sluice:mem:") {
		t.Errorf("helm install warns of an upgrade:\n%s", in)
	}
	set := map[string]any{"redis.enabled": false, "redis.url": "redis://redis.infra:6379/0"}
	for _, sec := range []string{"route_memory", "approvals", "agent_tasks", "rate_limits", "inventory"} {
		set["config."+sec] = map[string]any{"key_prefix": "x:" + sec + ":"}
	}
	if kept := notes(t, true, valuesWith(t, set)); strings.Contains(kept, "sluice:mem:") {
		t.Errorf("helm upgrade with every key_prefix set in config still warns:\n%s", kept)
	}
	if none := notes(t, true, valuesWith(t, map[string]any{"redis.enabled": false, "replicaCount": 1})); strings.Contains(none, "sluice:mem:") {
		t.Errorf("helm upgrade without Redis warns of its prefixes:\n%s", none)
	}
}

// TestHelmGoMemoryLimitQuantities: a memory limit Kubernetes takes, in
// bytes as a YAML number or with a decimal fraction (1.5Gi), made the
// chart refuse to render, where before GOMEMLIMIT it rendered.
func TestHelmGoMemoryLimitQuantities(t *testing.T) {
	for _, tc := range []struct {
		limit any
		want  string
	}{{"1.5Gi", "1382MiB"}, {"0.5Gi", "460MiB"}, {float64(536870912), "460MiB"}, {"536870912", "460MiB"}} {
		vals := valuesWith(t, map[string]any{"resources.limits.memory": tc.limit})
		docs, err := render(t, vals)
		if err != nil {
			t.Errorf("limits.memory %v: %v", tc.limit, err)
			continue
		}
		got := ""
		for _, e := range strict[appsv1.Deployment](t, docs["Deployment/rel-sluice"]).Spec.Template.Spec.Containers[0].Env {
			if e.Name == "GOMEMLIMIT" {
				got = e.Value
			}
		}
		if got != tc.want {
			t.Errorf("limits.memory %v: GOMEMLIMIT %q, want %q", tc.limit, got, tc.want)
		}
	}
}
