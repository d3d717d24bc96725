package helm

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

// valuesWith is ci/test-values.yaml with each "a.b.c" key set to its value
// (nil deletes it).
func valuesWith(t *testing.T, set map[string]any) map[string]any {
	t.Helper()
	vals := ciValues(t)
	for path, v := range set {
		m := vals
		keys := strings.Split(path, ".")
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		if v == nil {
			delete(m, keys[len(keys)-1])
		} else {
			m[keys[len(keys)-1]] = v
		}
	}
	return vals
}

// sluiceYAML is the rendered sluice.yaml, decoded.
func sluiceYAML(t *testing.T, docs map[string][]byte) (string, map[string]any) {
	t.Helper()
	var doc []byte
	for k, d := range docs {
		if strings.HasPrefix(k, "ConfigMap/") {
			doc = d
		}
	}
	if doc == nil {
		t.Fatal("no ConfigMap rendered")
	}
	cm := strict[corev1.ConfigMap](t, doc)
	src := cm.Data["sluice.yaml"]
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(src), &cfg); err != nil {
		t.Fatalf("sluice.yaml: %v\n%s", err, src)
	}
	return src, cfg
}

// A ServiceMonitor scrapes /metrics on the admin port, which answers 404
// unless telemetry.prometheus is on: the chart turns it on with the
// ServiceMonitor rather than render one whose every scrape fails.
func TestHelmServiceMonitorTurnsOnMetrics(t *testing.T) {
	docs, err := render(t, ciValues(t))
	if err != nil {
		t.Fatal(err)
	}
	if docs["ServiceMonitor/rel-sluice"] == nil {
		t.Fatal("no ServiceMonitor rendered")
	}
	src, cfg := sluiceYAML(t, docs)
	tel, _ := cfg["telemetry"].(map[string]any)
	if tel["prometheus"] != true {
		t.Errorf("ServiceMonitor rendered but telemetry.prometheus is not on, so /metrics answers 404:\n%s", src)
	}

	// Asked for with no admin listener to scrape, it is an error, not a
	// ServiceMonitor silently left out.
	_, err = render(t, valuesWith(t, map[string]any{"admin.enabled": false}))
	if err == nil || !strings.Contains(err.Error(), "serviceMonitor.enabled") {
		t.Errorf("serviceMonitor without admin: got %v, want an error naming serviceMonitor.enabled", err)
	}
}

// With one replica a PodDisruptionBudget of minAvailable 1 forbids every
// eviction: kubectl drain and node upgrades hang on the pod for ever. One
// minAvailable at or above the replicas does the same with more.
func TestHelmPodDisruptionBudgetLetsNodesDrain(t *testing.T) {
	docs, err := render(t, valuesWith(t, map[string]any{"replicaCount": 1}))
	if err != nil {
		t.Fatal(err)
	}
	if pdb := docs["PodDisruptionBudget/rel-sluice"]; pdb != nil {
		t.Errorf("one replica with a PodDisruptionBudget that no eviction satisfies:\n%s", pdb)
	}
	_, err = render(t, valuesWith(t, map[string]any{"replicaCount": 2, "podDisruptionBudget.minAvailable": 2}))
	if err == nil || !strings.Contains(err.Error(), "podDisruptionBudget.minAvailable") {
		t.Errorf("minAvailable 2 of 2 replicas: got %v, want an error naming podDisruptionBudget.minAvailable", err)
	}
	docs, err = render(t, valuesWith(t, map[string]any{"replicaCount": 3, "podDisruptionBudget.minAvailable": "50%"}))
	if err != nil || docs["PodDisruptionBudget/rel-sluice"] == nil {
		t.Errorf("minAvailable 50%% of 3: %v, PDB %q", err, docs["PodDisruptionBudget/rel-sluice"])
	}
}

// Replicas without Redis each keep route memory, held approvals and rate
// limits alone: a call that read private data on one pod goes to a sink
// through another, an approval sent through the admin Service reaches a
// pod that does not hold the call. The chart refuses that rather than
// note it after the install.
func TestHelmReplicasNeedRedis(t *testing.T) {
	_, err := render(t, valuesWith(t, map[string]any{"redis.enabled": false}))
	if err == nil || !strings.Contains(err.Error(), "redis.url") {
		t.Errorf("3 replicas without Redis: got %v, want an error naming redis.url", err)
	}
	docs, err := render(t, valuesWith(t, map[string]any{"redis.enabled": false, "replicaCount": 1}))
	if err != nil {
		t.Fatalf("1 replica without Redis: %v", err)
	}
	if src, _ := sluiceYAML(t, docs); strings.Contains(src, "redis_url") {
		t.Errorf("no Redis, yet:\n%s", src)
	}
}

// A Redis password in redis.url would sit in the ConfigMap, readable by
// whoever may read ConfigMaps: the chart refuses it and takes the URL from
// a Secret instead; other secrets the config names (upstream tokens) come
// from Secrets mounted as files for ${file:PATH}.
func TestHelmSecretsStayOutOfTheConfigMap(t *testing.T) {
	for _, url := range []string{"redis://:hunter2@redis:6379/0", "rediss://default:hunter2@redis:6380/0"} {
		_, err := render(t, valuesWith(t, map[string]any{"redis.enabled": false, "redis.url": url}))
		if err == nil || !strings.Contains(err.Error(), "redis.existingSecret") {
			t.Errorf("redis.url %s: got %v, want an error naming redis.existingSecret", url, err)
		}
	}

	docs, err := render(t, valuesWith(t, map[string]any{
		"redis.enabled": false, "redis.existingSecret": "sluice-redis",
		"extraSecretMounts": []any{map[string]any{"name": "github", "secretName": "gh-token"}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	src, _ := sluiceYAML(t, docs)
	if n := strings.Count(src, "redis_url: ${file:/etc/sluice/redis/url}"); n != 5 {
		t.Errorf("sluice.yaml has %d redis_url from the Secret, want 5:\n%s", n, src)
	}
	d := strict[appsv1.Deployment](t, docs["Deployment/rel-sluice"])
	pod := d.Spec.Template.Spec
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range pod.Containers[0].VolumeMounts {
		mounts[m.Name] = m
	}
	secrets := map[string]string{}
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			secrets[v.Name] = v.Secret.SecretName
		}
	}
	for vol, want := range map[string]struct{ secret, path string }{
		"redis":         {"sluice-redis", "/etc/sluice/redis"},
		"secret-github": {"gh-token", "/etc/sluice/secrets/github"},
	} {
		m := mounts[vol]
		if secrets[vol] != want.secret || m.MountPath != want.path || !m.ReadOnly {
			t.Errorf("volume %s: Secret %q mounted at %q (read-only %v), want %q at %q read-only", vol, secrets[vol], m.MountPath, m.ReadOnly, want.secret, want.path)
		}
	}
}

// Other combinations of values render manifests the published schemas
// accept, as the CI values do (TestHelmTemplateSchemas).
func TestHelmTemplateCombinationsSchemas(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads the Kubernetes OpenAPI document from the Go module proxy")
	}
	v := newSchemaValidator(t)
	for name, set := range map[string]map[string]any{
		"one replica without Redis":    {"replicaCount": 1, "redis.enabled": false},
		"external Redis":               {"redis.enabled": false, "redis.url": "redis://redis.infra:6379/0"},
		"Redis URL from a Secret":      {"redis.enabled": false, "redis.existingSecret": "sluice-redis", "extraSecretMounts": []any{map[string]any{"name": "github", "secretName": "gh-token"}}},
		"admin token from a Secret":    {"admin.existingSecret": "ops-admin"},
		"no admin, no monitor":         {"admin.enabled": false, "serviceMonitor.enabled": false, "podDisruptionBudget.enabled": false},
		"no session or inventory keys": {"sessionKeys.existingSecret": "", "sessionKeys.openingSecret": "", "inventoryKey.existingSecret": ""},
	} {
		docs, err := render(t, valuesWith(t, set))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for k, doc := range docs {
			if err := v.validate(doc); err != nil {
				t.Errorf("%s: %s: %v\n%s", name, k, err, doc)
			}
		}
	}
}

// /readyz answers 503 while any one upstream cannot be dialled. As the
// readiness probe it took every replica out of both Services when one
// upstream went down: agents lost every other upstream too, and operators
// the admin API (approvals) and /metrics, for as long as the outage
// lasted. Readiness is the gateway's own (/healthz); /readyz stays for
// people asking about upstreams.
func TestHelmReadinessIsTheGatewaysOwn(t *testing.T) {
	docs, err := render(t, ciValues(t))
	if err != nil {
		t.Fatal(err)
	}
	c := strict[appsv1.Deployment](t, docs["Deployment/rel-sluice"]).Spec.Template.Spec.Containers[0]
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "mcp" {
			t.Errorf("%s probe %+v, want GET /healthz on port mcp", name, p)
		}
	}
}

// session_keys seal with the first key and open with all, so a key is
// rotated without ending sessions by first adding the new key as one that
// only opens, then making it the first. The chart mounted one key: a
// rotation rolled out pods each opening only the ids its own key sealed,
// and every 2025-era session broke (404) on half the replicas.
func TestHelmSessionKeyRotation(t *testing.T) {
	docs, err := render(t, valuesWith(t, map[string]any{"sessionKeys.openingSecret": "sluice-session-key-next"}))
	if err != nil {
		t.Fatal(err)
	}
	src, cfg := sluiceYAML(t, docs)
	keys, _ := cfg["session_keys"].([]any)
	if len(keys) != 2 || keys[0] != "${file:/etc/sluice/session/key}" || keys[1] != "${file:/etc/sluice/session-opening/key}" {
		t.Errorf("session_keys %v, want the sealing key then the opening one:\n%s", keys, src)
	}
	pod := strict[appsv1.Deployment](t, docs["Deployment/rel-sluice"]).Spec.Template.Spec
	var mounted, volume bool
	for _, m := range pod.Containers[0].VolumeMounts {
		mounted = mounted || (m.Name == "session-opening" && m.MountPath == "/etc/sluice/session-opening" && m.ReadOnly)
	}
	for _, v := range pod.Volumes {
		volume = volume || (v.Name == "session-opening" && v.Secret != nil && v.Secret.SecretName == "sluice-session-key-next")
	}
	if !mounted || !volume {
		t.Errorf("the opening key's Secret is not mounted read-only at /etc/sluice/session-opening (mount %v, volume %v)", mounted, volume)
	}

	_, err = render(t, valuesWith(t, map[string]any{"sessionKeys.existingSecret": "", "sessionKeys.openingSecret": "k"}))
	if err == nil || !strings.Contains(err.Error(), "sessionKeys.existingSecret") {
		t.Errorf("an opening key without a sealing one: got %v, want an error naming sessionKeys.existingSecret", err)
	}
}

// The trial Redis has no password: without a NetworkPolicy any pod in the
// cluster could connect and write what the gateways trust there (held
// calls' approvals, route memory, rate limits). Only the gateway's pods
// may reach it.
func TestHelmTrialRedisOnlyForTheGateway(t *testing.T) {
	docs, err := render(t, ciValues(t))
	if err != nil {
		t.Fatal(err)
	}
	doc := docs["NetworkPolicy/rel-sluice-redis"]
	if doc == nil {
		t.Fatal("trial Redis without a NetworkPolicy: any pod in the cluster may write approvals and route memory")
	}
	np := strict[networkingv1.NetworkPolicy](t, doc)
	redisPod := strict[appsv1.Deployment](t, docs["Deployment/rel-sluice-redis"]).Spec.Template.Labels
	gatewayPod := strict[appsv1.Deployment](t, docs["Deployment/rel-sluice"]).Spec.Template.Labels
	if !selects(np.Spec.PodSelector.MatchLabels, redisPod) || selects(np.Spec.PodSelector.MatchLabels, gatewayPod) {
		t.Errorf("NetworkPolicy selects %v: want the Redis pod (%v) only", np.Spec.PodSelector.MatchLabels, redisPod)
	}
	if len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress || len(np.Spec.Ingress) != 1 {
		t.Fatalf("NetworkPolicy: %+v, want one ingress rule", np.Spec)
	}
	in := np.Spec.Ingress[0]
	if len(in.From) != 1 || in.From[0].PodSelector == nil || in.From[0].NamespaceSelector != nil || in.From[0].IPBlock != nil ||
		!selects(in.From[0].PodSelector.MatchLabels, gatewayPod) || selects(in.From[0].PodSelector.MatchLabels, redisPod) {
		t.Errorf("NetworkPolicy lets in %+v, want the gateway's pods only", in.From)
	}
	if len(in.Ports) != 1 || in.Ports[0].Port.String() != "6379" {
		t.Errorf("NetworkPolicy ports %+v, want 6379", in.Ports)
	}

	docs, err = render(t, valuesWith(t, map[string]any{"redis.enabled": false, "redis.url": "redis://redis.infra:6379/0"}))
	if err != nil {
		t.Fatal(err)
	}
	if docs["NetworkPolicy/rel-sluice-redis"] != nil {
		t.Error("NetworkPolicy rendered for a Redis the chart does not run")
	}
}

// selects reports whether a matchLabels selector selects a pod's labels.
func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

// image.digest pins the image: a tag (the chart's appVersion by default)
// may be pushed again, and with pullPolicy IfNotPresent the replicas on
// different nodes would then run different builds.
func TestHelmImageDigest(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for tag, want := range map[string]string{
		"":       "ghcr.io/sluicehq/sluice@" + digest,
		"v0.3.0": "ghcr.io/sluicehq/sluice:v0.3.0@" + digest,
	} {
		docs, err := render(t, valuesWith(t, map[string]any{"image.tag": tag, "image.digest": digest}))
		if err != nil {
			t.Fatal(err)
		}
		if got := strict[appsv1.Deployment](t, docs["Deployment/rel-sluice"]).Spec.Template.Spec.Containers[0].Image; got != want {
			t.Errorf("tag %q: image %q, want %q", tag, got, want)
		}
	}
	_, err := render(t, valuesWith(t, map[string]any{"image.digest": "latest"}))
	if err == nil || !strings.Contains(err.Error(), "image.digest") {
		t.Errorf("image.digest latest: got %v, want an error naming image.digest", err)
	}
}

// On SIGTERM the gateway closes its listeners at once, while Services and
// ingresses still send it new connections until they see the pod leave:
// during every rollout those were refused. A preStop sleep (no shell in
// the image: the kubelet's own) keeps the pod serving until then, within a
// grace period that leaves shutdown_timeout (15s by default) to drain.
func TestHelmRolloutDrainsBeforeSIGTERM(t *testing.T) {
	docs, err := render(t, ciValues(t))
	if err != nil {
		t.Fatal(err)
	}
	pod := strict[appsv1.Deployment](t, docs["Deployment/rel-sluice"]).Spec.Template.Spec
	c := pod.Containers[0]
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds < 1 {
		t.Fatalf("no preStop sleep: %+v", c.Lifecycle)
	}
	grace := int64(30) // the Kubernetes default
	if pod.TerminationGracePeriodSeconds != nil {
		grace = *pod.TerminationGracePeriodSeconds
	}
	if s := c.Lifecycle.PreStop.Sleep.Seconds; grace < s+15 {
		t.Errorf("terminationGracePeriodSeconds %d leaves less than 15s to drain after a %ds preStop sleep", grace, s)
	}

	docs, err = render(t, valuesWith(t, map[string]any{"preStopSleepSeconds": 0}))
	if err != nil {
		t.Fatal(err)
	}
	if c := strict[appsv1.Deployment](t, docs["Deployment/rel-sluice"]).Spec.Template.Spec.Containers[0]; c.Lifecycle != nil {
		t.Errorf("preStopSleepSeconds 0 (clusters before Kubernetes 1.30): lifecycle %+v", c.Lifecycle)
	}
}

// Two releases on one Redis (a shared redis.url: staging and production,
// two teams) shared everything kept under the default key prefixes: one's
// admin API listed and approved the other's held calls, its agents spent
// the other's rate limits and added to its route memory. Each release's
// keys are under its namespace and name.
func TestHelmReleasesOnOneRedisKeepApart(t *testing.T) {
	prefixes := func(name, ns string) map[string]string {
		docs, err := renderAs(t, name, ns, valuesWith(t, map[string]any{"redis.enabled": false, "redis.url": "redis://redis.infra:6379/0"}))
		if err != nil {
			t.Fatal(err)
		}
		src, cfg := sluiceYAML(t, docs)
		out := map[string]string{}
		for _, sec := range []string{"route_memory", "approvals", "agent_tasks", "rate_limits", "inventory"} {
			m, _ := cfg[sec].(map[string]any)
			p, _ := m["key_prefix"].(string)
			if p == "" {
				t.Errorf("%s/%s: %s has no key_prefix, so it shares the default with every other release:\n%s", ns, name, sec, src)
			}
			out[sec] = p
		}
		return out
	}
	a, b, c := prefixes("sluice", "staging"), prefixes("sluice", "prod"), prefixes("gw", "prod")
	for sec := range a {
		if a[sec] == b[sec] || b[sec] == c[sec] || a[sec] == c[sec] {
			t.Errorf("%s: key_prefix %q, %q, %q: releases share keys", sec, a[sec], b[sec], c[sec])
		}
	}
	for _, sec := range []string{"approvals", "inventory"} {
		if p := a[sec]; !strings.HasPrefix(p, "{") || !strings.Contains(p, "}") {
			t.Errorf("%s key_prefix %q: its scripts touch every key, which must share a Redis Cluster hash slot ({…})", sec, p)
		}
	}

	// A key_prefix given in config is kept.
	docs, err := render(t, valuesWith(t, map[string]any{"config.approvals": map[string]any{"key_prefix": "{mine}:"}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, cfg := sluiceYAML(t, docs); cfg["approvals"].(map[string]any)["key_prefix"] != "{mine}:" {
		t.Errorf("approvals.key_prefix from config replaced: %v", cfg["approvals"])
	}
}

// With tls: in the config the agents' listener speaks only HTTPS: probes
// sent over HTTP failed the handshake and no replica ever became ready.
func TestHelmProbesFollowTLS(t *testing.T) {
	for _, tc := range []struct {
		tls  any
		want corev1.URIScheme
	}{
		{nil, corev1.URISchemeHTTP},
		{map[string]any{"cert_file": "/etc/sluice/secrets/tls/tls.crt", "key_file": "/etc/sluice/secrets/tls/tls.key"}, corev1.URISchemeHTTPS},
	} {
		docs, err := render(t, valuesWith(t, map[string]any{"config.tls": tc.tls,
			"extraSecretMounts": []any{map[string]any{"name": "tls", "secretName": "sluice-tls"}}}))
		if err != nil {
			t.Fatal(err)
		}
		c := strict[appsv1.Deployment](t, docs["Deployment/rel-sluice"]).Spec.Template.Spec.Containers[0]
		for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
			got := p.HTTPGet.Scheme
			if got == "" {
				got = corev1.URISchemeHTTP
			}
			if got != tc.want {
				t.Errorf("tls %v: %s probe scheme %s, want %s", tc.tls, name, got, tc.want)
			}
		}
	}
}

// The Go runtime does not read the container's memory limit: with the
// heap free to grow to twice what is live (GOGC 100) a gateway whose live
// heap passed half the limit was OOM-killed where a collection would have
// kept it. GOMEMLIMIT is set to 90% of the limit, the rest for stacks and
// what is not heap.
func TestHelmGoMemoryLimit(t *testing.T) {
	for limit, want := range map[any]string{"512Mi": "460MiB", "2Gi": "1843MiB", "1G": "858MiB", nil: ""} {
		vals := valuesWith(t, map[string]any{"resources.limits.memory": "1"})
		vals["resources"].(map[string]any)["limits"].(map[string]any)["memory"] = limit // nil: Helm's null, no limit
		docs, err := render(t, vals)
		if err != nil {
			t.Fatalf("limit %v: %v", limit, err)
		}
		got := ""
		for _, e := range strict[appsv1.Deployment](t, docs["Deployment/rel-sluice"]).Spec.Template.Spec.Containers[0].Env {
			if e.Name == "GOMEMLIMIT" {
				got = e.Value
			}
		}
		if got != want {
			t.Errorf("limits.memory %v: GOMEMLIMIT %q, want %q", limit, got, want)
		}
	}
}
