{{- define "sluice.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "sluice.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "sluice.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: gateway
{{- end -}}

{{- define "sluice.redisURL" -}}
{{- if .Values.redis.existingSecret -}}
${file:/etc/sluice/redis/url}
{{- else if .Values.redis.url -}}
{{- .Values.redis.url -}}
{{- else if .Values.redis.enabled -}}
{{- printf "redis://%s-redis:6379/0" (include "sluice.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* sluice.image: repository:tag, or pinned by image.digest. */}}
{{- define "sluice.image" -}}
{{- $img := .Values.image -}}
{{- if $img.digest -}}
{{- if not (regexMatch "^sha256:[a-f0-9]{64}$" $img.digest) -}}
{{- fail (printf "image.digest %q: give the image's sha256:<64 hex digits> (docker buildx imagetools inspect IMAGE)" $img.digest) -}}
{{- end -}}
{{- if $img.tag -}}
{{- printf "%s:%s@%s" $img.repository $img.tag $img.digest -}}
{{- else -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- end -}}
{{- else -}}
{{- printf "%s:%s" $img.repository ($img.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/* sluice.gomemlimit: 90% of resources.limits.memory in MiB, "" without one. */}}
{{- define "sluice.gomemlimit" -}}
{{- $lim := ((.Values.resources | default dict).limits | default dict).memory -}}
{{- if $lim -}}
{{- $bytes := 0 -}}
{{- if or (kindIs "float64" $lim) (kindIs "int" $lim) (kindIs "int64" $lim) -}}
{{- /* In bytes, a YAML number. */ -}}
{{- $bytes = int64 $lim -}}
{{- else -}}
{{- $q := toString $lim -}}
{{- if not (regexMatch "^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|K|M|G|T)?$" $q) -}}
{{- fail (printf "resources.limits.memory %q: give a number with a unit (1536Mi, 1.5Gi, 2G) so that the chart can set GOMEMLIMIT below it" $q) -}}
{{- end -}}
{{- $units := dict "" 1 "K" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 -}}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $q -}}
{{- $unit := trimPrefix $num $q -}}
{{- $bytes = int64 (mulf (float64 $num) (get $units $unit)) -}}
{{- end -}}
{{- printf "%dMiB" (div (div (mul $bytes 9) 10) 1048576) -}}
{{- end -}}
{{- end -}}

{{- define "sluice.adminSecret" -}}
{{- .Values.admin.existingSecret | default (printf "%s-admin" (include "sluice.fullname" .)) -}}
{{- end -}}

{{/* sluice.yaml: the user's config with what the pod needs added. */}}
{{- define "sluice.config" -}}
{{- $c := deepCopy .Values.config -}}
{{- $name := include "sluice.fullname" . -}}
{{- $_ := set $c "listen" (printf "0.0.0.0:%d" (int .Values.service.port)) -}}
{{- $_ := set $c "data_dir" "/var/lib/sluice" -}}
{{- $hosts := list $name (printf "%s.%s" $name .Release.Namespace) (printf "%s.%s.svc" $name .Release.Namespace) (printf "%s.%s.svc.cluster.local" $name .Release.Namespace) -}}
{{- $_ := set $c "allowed_hosts" (concat $hosts .Values.extraAllowedHosts (get $c "allowed_hosts" | default list) | uniq) -}}
{{- if .Values.admin.enabled -}}
{{- $_ := set $c "admin_listen" (printf "0.0.0.0:%d" (int .Values.admin.port)) -}}
{{- $_ := set $c "admin_token" "${file:/etc/sluice/admin/token}" -}}
{{- if not (hasKey $c "admin_allowed_hosts") -}}
{{- $_ := set $c "admin_allowed_hosts" (list "*") -}}
{{- end -}}
{{- end -}}
{{- $auth := get $c "auth" | default dict -}}
{{- if eq (get $auth "mode" | default "") "api_key" -}}
{{- $keys := get $auth "api_keys" | default dict -}}
{{- if not (hasKey $keys "file") -}}
{{- $_ := set $keys "file" "/etc/sluice/keys/agent_keys.json" -}}
{{- $_ := set $auth "api_keys" $keys -}}
{{- end -}}
{{- end -}}
{{- if .Values.sessionKeys.existingSecret -}}
{{- $keys := list "${file:/etc/sluice/session/key}" -}}
{{- if .Values.sessionKeys.openingSecret -}}
{{- $keys = append $keys "${file:/etc/sluice/session-opening/key}" -}}
{{- end -}}
{{- $_ := set $c "session_keys" $keys -}}
{{- end -}}
{{- if .Values.inventoryKey.existingSecret -}}
{{- $inv := get $c "inventory" | default dict -}}
{{- $_ := set $inv "key_file" "/etc/sluice/inventory/key.pem" -}}
{{- $_ := set $c "inventory" $inv -}}
{{- end -}}
{{- if .Values.serviceMonitor.enabled -}}
{{- $tel := get $c "telemetry" | default dict -}}
{{- $_ := set $tel "prometheus" true -}}
{{- $_ := set $c "telemetry" $tel -}}
{{- end -}}
{{- $redis := include "sluice.redisURL" . -}}
{{- if $redis -}}
{{- if .Values.inventoryKey.existingSecret -}}
{{- $inv := get $c "inventory" -}}
{{- if not (hasKey $inv "redis_url") -}}
{{- $_ := set $inv "redis_url" $redis -}}
{{- end -}}
{{- end -}}
{{- $rm := get $c "route_memory" | default dict -}}
{{- if not (hasKey $rm "redis_url") -}}
{{- $_ := set $rm "redis_url" $redis -}}
{{- $_ := set $c "route_memory" $rm -}}
{{- end -}}
{{- $ap := get $c "approvals" | default dict -}}
{{- if not (hasKey $ap "redis_url") -}}
{{- $_ := set $ap "redis_url" $redis -}}
{{- $_ := set $c "approvals" $ap -}}
{{- end -}}
{{- $at := get $c "agent_tasks" | default dict -}}
{{- if not (hasKey $at "redis_url") -}}
{{- $_ := set $at "redis_url" $redis -}}
{{- $_ := set $c "agent_tasks" $at -}}
{{- end -}}
{{- $rl := get $c "rate_limits" | default dict -}}
{{- if and (get $rl "rules") (not (hasKey $rl "redis_url")) -}}
{{- $_ := set $rl "redis_url" $redis -}}
{{- end -}}
{{- end -}}
{{- /* Each release's keys under its namespace and name: two releases on one
Redis would otherwise share held calls and their approval, rate limits,
route memory and pins. approvals and inventory keep one hash slot. */ -}}
{{- $id := printf "sluice:%s/%s" .Release.Namespace .Release.Name -}}
{{- range $sec, $p := dict "route_memory" (printf "%s:mem:" $id) "approvals" (printf "{%s:approvals}:" $id) "agent_tasks" (printf "%s:a2a:task:" $id) "rate_limits" (printf "%s:ratelimit:" $id) "inventory" (printf "{%s:inventory}:" $id) -}}
{{- $m := get $c $sec -}}
{{- if and (kindIs "map" $m) (get $m "redis_url") (not (hasKey $m "key_prefix")) -}}
{{- $_ := set $m "key_prefix" $p -}}
{{- end -}}
{{- end -}}
{{- toYaml $c -}}
{{- end -}}


{{/* sluice.check: values the chart refuses, each with what to set. */}}
{{- define "sluice.check" -}}
{{- $auth := .Values.config.auth | default dict -}}
{{- if and (eq ($auth.mode | default "") "api_key") (not .Values.apiKeys.existingSecret) -}}
{{- fail "apiKeys.existingSecret: config.auth.mode is api_key, so name the Secret holding agent_keys.json (made with `sluice keys create`), or choose another auth mode" -}}
{{- end -}}
{{- if regexMatch "^[A-Za-z0-9+.-]+://[^/@]*:[^/@]*@" (.Values.redis.url | default "") -}}
{{- fail "redis.url holds a password, which would sit in the ConfigMap: put the URL in a Secret (key `url`) and name it in redis.existingSecret instead" -}}
{{- end -}}
{{- if and (gt (int .Values.replicaCount) 1) (not (include "sluice.redisURL" .)) -}}
{{- fail (printf "replicaCount is %d without Redis: each replica would keep route memory, held approvals and rate limits alone (a sink denied on one pod is allowed through another; an approval reaches a pod that does not hold the call). Set redis.url, redis.existingSecret or redis.enabled, or replicaCount: 1" (int .Values.replicaCount)) -}}
{{- end -}}
{{- if and .Values.serviceMonitor.enabled (not .Values.admin.enabled) -}}
{{- fail "serviceMonitor.enabled: /metrics is served on the admin listener, which admin.enabled: false turns off; enable admin or turn the ServiceMonitor off" -}}
{{- end -}}
{{- $min := .Values.podDisruptionBudget.minAvailable -}}
{{- if and .Values.podDisruptionBudget.enabled (gt (int .Values.replicaCount) 1) (not (kindIs "string" $min)) (ge (int $min) (int .Values.replicaCount)) -}}
{{- fail (printf "podDisruptionBudget.minAvailable %d with replicaCount %d allows no eviction: node drains would hang; set it below replicaCount" (int $min) (int .Values.replicaCount)) -}}
{{- end -}}
{{- if and .Values.sessionKeys.openingSecret (not .Values.sessionKeys.existingSecret) -}}
{{- fail "sessionKeys.openingSecret opens sessions the key in sessionKeys.existingSecret seals: set that too" -}}
{{- end -}}
{{- range .Values.extraSecretMounts -}}
{{- if not (and .name .secretName (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" .name)) -}}
{{- fail "extraSecretMounts: each needs name (lowercase letters, digits, '-') and secretName" -}}
{{- end -}}
{{- end -}}
{{- end -}}
