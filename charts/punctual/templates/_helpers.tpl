{{/*
Names and labels shared by every template.
*/}}

{{/* The chart name, or nameOverride. */}}
{{- define "punctual.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The prefix of every object's name: "<release>-<chart>", or just the release when it already
contains the chart name. 63 characters at most (DNS label); the Redis objects add "-redis".
*/}}
{{- define "punctual.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 57 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 57 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 57 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The namespace of every namespaced object: namespaceOverride, else the release's (where Helm
keeps its release record whatever the override).
*/}}
{{- define "punctual.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{- define "punctual.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The recommended labels, without a component: every object of the release carries them. */}}
{{- define "punctual.labels" -}}
helm.sh/chart: {{ include "punctual.chart" . }}
app.kubernetes.io/name: {{ include "punctual.name" . | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: punctual
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
Selector labels of the operator pods. The component keeps the bundled Redis pods out of the
operator's Deployment, PodDisruptionBudget and metrics Service. Immutable once installed.
*/}}
{{- define "punctual.selectorLabels" -}}
app.kubernetes.io/name: {{ include "punctual.name" . | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "punctual.operatorLabels" -}}
{{ include "punctual.labels" . }}
app.kubernetes.io/component: operator
{{- end -}}

{{/*
The `job` label of the operator's series, which the alerts select: `<fullname>`, set by a
relabeling of the ServiceMonitor or the PodMonitor alike; or, with the monitor's jobLabel, the
value of that label on what it scrapes (the metrics Service's labels, or the pods' with podLabels).
*/}}
{{- define "punctual.metricsJob" -}}
{{- $monitor := .Values.metrics.serviceMonitor -}}
{{- $labels := include "punctual.operatorLabels" . | fromYaml -}}
{{- if .Values.metrics.podMonitor.enabled -}}
{{- $monitor = .Values.metrics.podMonitor -}}
{{- $labels = merge (dict) .Values.podLabels $labels -}}
{{- end -}}
{{- if $monitor.jobLabel -}}
{{- required (printf "jobLabel %q: the scraped objects carry no such label (add it with commonLabels or podLabels)" $monitor.jobLabel) (get $labels $monitor.jobLabel) -}}
{{- else -}}
{{- include "punctual.fullname" . -}}
{{- end -}}
{{- end -}}

{{/*
A monitor's endpoint settings after its port and path (servicemonitor.yaml, podmonitor.yaml):
honorLabels, the job relabeling (unless jobLabel names a label for it) and the user's
relabelings and metricRelabelings. Called with (list $root $monitor).
*/}}
{{- define "punctual.monitorEndpoint" -}}
{{- $root := index . 0 -}}
{{- $monitor := index . 1 -}}
{{- $relabelings := $monitor.relabelings -}}
{{- $job := include "punctual.metricsJob" $root -}}
{{- if not $monitor.jobLabel -}}
{{- $relabelings = prepend $relabelings (dict "action" "replace" "targetLabel" "job" "replacement" $job) -}}
{{- end -}}
interval: {{ $monitor.interval }}
scrapeTimeout: {{ $monitor.scrapeTimeout }}
honorLabels: {{ $monitor.honorLabels }}
{{- with $relabelings }}
relabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $monitor.metricRelabelings }}
metricRelabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "punctual.redis.fullname" -}}
{{- printf "%s-redis" (include "punctual.fullname" .) -}}
{{- end -}}

{{- define "punctual.redis.selectorLabels" -}}
app.kubernetes.io/name: {{ include "punctual.name" . | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/component: redis
{{- end -}}

{{- define "punctual.redis.labels" -}}
{{ include "punctual.labels" . }}
app.kubernetes.io/component: redis
{{- end -}}

{{- define "punctual.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "punctual.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
An image reference from {repository, tag, digest}: repository@digest when a digest pins it,
else repository:tag, after global.imageRegistry when set. Called with (list $image $defaultTag
$root).
*/}}
{{- define "punctual.imageRef" -}}
{{- $image := index . 0 -}}
{{- $repository := $image.repository -}}
{{- with ((index . 2).Values.global).imageRegistry -}}
{{- $repository = printf "%s/%s" (trimSuffix "/" .) $repository -}}
{{- end -}}
{{- if $image.digest -}}
{{- printf "%s@%s" $repository $image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repository (default (index . 1) $image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
The affinity of a pod spec: affinity as given, with podAntiAffinity's preset (spread over nodes
the pods with the given selector labels: the operator's, or the Sentinel-managed Redis') unless
it names its own. Called with (list $root $selectorLabels); "" when there is none.
*/}}
{{- define "punctual.affinity" -}}
{{- $root := index . 0 -}}
{{- $affinity := deepCopy $root.Values.affinity -}}
{{- if and (ne $root.Values.podAntiAffinity "none") (not (hasKey $affinity "podAntiAffinity")) -}}
{{- $term := dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" (index . 1 | fromYaml)) -}}
{{- if eq $root.Values.podAntiAffinity "hard" -}}
{{- $_ := set $affinity "podAntiAffinity" (dict "requiredDuringSchedulingIgnoredDuringExecution" (list $term)) -}}
{{- else -}}
{{- $_ := set $affinity "podAntiAffinity" (dict "preferredDuringSchedulingIgnoredDuringExecution" (list (dict "weight" 100 "podAffinityTerm" $term))) -}}
{{- end -}}
{{- end -}}
{{- with $affinity }}{{ toYaml . }}{{ end -}}
{{- end -}}

{{/* The operator image (also the helm test's). */}}
{{- define "punctual.image" -}}
{{- include "punctual.imageRef" (list .Values.image .Chart.AppVersion .) -}}
{{- end -}}

{{/* The gate image of warm Jobs, the operator's own version unless set. */}}
{{- define "punctual.gateImage" -}}
{{- include "punctual.imageRef" (list .Values.warmStart.gateImage .Chart.AppVersion .) -}}
{{- end -}}

{{/* imagePullSecrets of a pod spec, [{name}] as Kubernetes has them; empty when none. */}}
{{- define "punctual.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- range . }}
  - name: {{ .name }}
  {{- end }}
{{- end }}
{{- end -}}

{{/*
The bundled Redis' password source as "secret-name/key": redis.bundled.auth.existingSecret, or
the chart's own Secret `<fullname>-redis` (key "password").
*/}}
{{- define "punctual.redis.passwordSecret" -}}
{{- $auth := .Values.redis.bundled.auth -}}
{{- if $auth.existingSecret -}}
{{- printf "%s/%s" $auth.existingSecret $auth.existingSecretKey -}}
{{- else -}}
{{- printf "%s/password" (include "punctual.redis.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/*
The password the chart generates for the bundled Redis: the installed release's (lookup), so an
upgrade keeps it, else a new random one. Computed once per render and remembered, so that the
Secret (redis.yaml) and both Deployments' checksums (deployment.yaml, redis.yaml) see the same
one although they are different templates.
*/}}
{{- define "punctual.redis.generatedPassword" -}}
{{- $memo := .Values.redis.bundled -}}
{{- if not (hasKey $memo "generatedPassword") -}}
{{- $existing := lookup "v1" "Secret" (include "punctual.namespace" .) (include "punctual.redis.fullname" .) -}}
{{- if and $existing $existing.data (hasKey $existing.data "password") -}}
{{- $_ := set $memo "generatedPassword" (index $existing.data "password" | b64dec) -}}
{{- else -}}
{{- $_ := set $memo "generatedPassword" (randAlphaNum 32) -}}
{{- end -}}
{{- end -}}
{{- index $memo "generatedPassword" -}}
{{- end -}}

{{/*
What the pods that hold a Redis password or URL must restart on: a hash of its content, never
of the Secret's name alone, so a new password rolls the operator and Redis together. The
content of a Secret the user made is read with lookup; where lookup finds nothing (`helm
template`, Argo CD, the first install) the Secret's name and key stand in: restart the pods
yourself after changing such a Secret (README, The bundled Redis).
*/}}
{{- define "punctual.secretChecksum" -}}
{{- $root := index . 0 -}}
{{- $source := index . 1 -}}
{{- $secret := lookup "v1" "Secret" (include "punctual.namespace" $root) (dir $source) -}}
{{- if and $secret $secret.data (hasKey $secret.data (base $source)) -}}
{{- printf "%s|%s" $source (index $secret.data (base $source)) | sha256sum | trunc 16 -}}
{{- else -}}
{{- printf "%s|" $source | sha256sum | trunc 16 -}}
{{- end -}}
{{- end -}}

{{/* The hash of the Redis password (or URL) the operator uses; "" when it uses no Redis. */}}
{{- define "punctual.redisChecksum" -}}
{{- if include "punctual.redis.bundled" . -}}
{{- include "punctual.redis.passwordChecksum" . -}}
{{- else if .Values.lock.redis.url -}}
{{- .Values.lock.redis.url | sha256sum | trunc 16 -}}
{{- else if .Values.lock.redis.existingSecret -}}
{{- include "punctual.secretChecksum" (list . (include "punctual.redisUrlSecret" .)) -}}
{{- end -}}
{{- end -}}

{{/* The hash of the bundled Redis' password: the same in the operator's and Redis' pods. */}}
{{- define "punctual.redis.passwordChecksum" -}}
{{- if .Values.redis.bundled.auth.existingSecret -}}
{{- include "punctual.secretChecksum" (list . (include "punctual.redis.passwordSecret" .)) -}}
{{- else -}}
{{- include "punctual.redis.generatedPassword" . | sha256sum | trunc 16 -}}
{{- end -}}
{{- end -}}

{{/*
"true" when the chart deploys its own Redis, else "". redis.bundled.enabled null (the default):
whenever lock.backend=redis and no Redis URL is given (lock.redis.existingSecret, lock.redis.url),
so that the default lock backend needs nothing more; true or false: as set.
*/}}
{{- define "punctual.redis.bundled" -}}
{{- $enabled := .Values.redis.bundled.enabled -}}
{{- if kindIs "invalid" $enabled -}}
{{- if and (eq .Values.lock.backend "redis") (not .Values.lock.redis.existingSecret) (not .Values.lock.redis.url) }}true{{ end -}}
{{- else if $enabled }}true{{ end -}}
{{- end -}}

{{/* "true" when the bundled Redis is the Sentinel-managed one, else "". */}}
{{- define "punctual.redis.sentinel" -}}
{{- if and (include "punctual.redis.bundled" .) .Values.redis.bundled.sentinel.enabled }}true{{ end -}}
{{- end -}}

{{/* The members of the Sentinel-managed Redis: each pod a server and a Sentinel. */}}
{{- define "punctual.redis.members" -}}3{{- end -}}

{{/* The DNS name of the bundled Redis' Service (headless with Sentinel: its pods' names end with it). */}}
{{- define "punctual.redis.host" -}}
{{- printf "%s.%s.svc" (include "punctual.redis.fullname" .) (include "punctual.namespace" .) -}}
{{- end -}}

{{/*
The operator's URL of the bundled Redis, its password left as $(REDIS_PASSWORD) for the kubelet
to expand: the single Redis' Service, or the three Sentinels by their pods' DNS names.
*/}}
{{- define "punctual.redis.url" -}}
{{- $bundled := .Values.redis.bundled -}}
{{- if include "punctual.redis.sentinel" . -}}
{{- $sentinels := list -}}
{{- range $member := until (int (include "punctual.redis.members" .)) -}}
{{- $sentinels = append $sentinels (printf "%s-%d.%s:%d" (include "punctual.redis.fullname" $) $member (include "punctual.redis.host" $) (int $bundled.sentinel.port)) -}}
{{- end -}}
{{- printf "redis+sentinel://:$(REDIS_PASSWORD)@%s/%s" (join "," $sentinels) $bundled.sentinel.masterSet -}}
{{- else -}}
{{- printf "redis://:$(REDIS_PASSWORD)@%s:%d/0" (include "punctual.redis.host" .) (int $bundled.port) -}}
{{- end -}}
{{- end -}}

{{/*
The environment of the bundled Redis' containers: the password (the server's and Sentinel's
configuration is written from it, and redis-cli in the readiness probes and the start script
authenticates with it), and with Sentinel what files/redis-sentinel.sh needs to know.
*/}}
{{- define "punctual.redis.startEnv" -}}
{{- $passwordSecret := include "punctual.redis.passwordSecret" . -}}
- name: REDISCLI_AUTH
  valueFrom:
    secretKeyRef:
      name: {{ dir $passwordSecret }}
      key: {{ base $passwordSecret }}
{{- if include "punctual.redis.sentinel" . }}
{{- $sentinel := .Values.redis.bundled.sentinel }}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: HEADLESS
  value: {{ include "punctual.redis.host" . | quote }}
- name: MEMBERS
  value: {{ include "punctual.redis.members" . | quote }}
- name: SERVICE
  value: {{ $sentinel.masterSet | quote }}
- name: REDIS_PORT
  value: {{ .Values.redis.bundled.port | quote }}
- name: SENTINEL_PORT
  value: {{ $sentinel.port | quote }}
# A majority of the Sentinels must agree the primary is down.
- name: QUORUM
  value: {{ add1 (div (int (include "punctual.redis.members" .)) 2) | quote }}
- name: DOWN_AFTER_MS
  value: {{ $sentinel.downAfterMilliseconds | quote }}
- name: FAILOVER_TIMEOUT_MS
  value: {{ $sentinel.failoverTimeout | quote }}
{{- end }}
{{- end -}}

{{/* --redis-wait-replicas: lock.redis.waitReplicas, or when null 1 with the Sentinel-managed Redis. */}}
{{- define "punctual.redis.waitReplicas" -}}
{{- $wait := .Values.lock.redis.waitReplicas -}}
{{- if kindIs "invalid" $wait -}}
{{- ternary 1 0 (eq (include "punctual.redis.sentinel" .) "true") -}}
{{- else -}}
{{- int $wait -}}
{{- end -}}
{{- end -}}

{{/* The namespace the helm test's ScheduledJob goes to: one the operator watches. */}}
{{- define "punctual.testNamespace" -}}
{{- if .Values.watchNamespaces -}}
{{- first .Values.watchNamespaces -}}
{{- else -}}
{{- (include "punctual.namespace" .) -}}
{{- end -}}
{{- end -}}

{{/*
Where the Redis URL comes from, as "secret-name/key", or "" when no Redis URL Secret is configured. The
operator gets it whatever the lock backend: queue targets use the same Redis.
Fails on contradictory settings, so a mistake shows at install time rather than as a crash loop.
*/}}
{{- define "punctual.redisUrlSecret" -}}
{{- $redis := .Values.lock.redis -}}
{{- $sources := 0 -}}
{{- if $redis.existingSecret }}{{ $sources = add1 $sources }}{{ end -}}
{{- if $redis.url }}{{ $sources = add1 $sources }}{{ end -}}
{{- if include "punctual.redis.bundled" . }}{{ $sources = add1 $sources }}{{ end -}}
{{- if gt $sources 1 -}}
{{- fail "choose one Redis URL source: lock.redis.existingSecret, lock.redis.url or redis.bundled.enabled=true" -}}
{{- end -}}
{{- if and (eq .Values.lock.backend "redis") (eq $sources 0) -}}
{{- fail "lock.backend=redis needs a Redis URL: set lock.redis.existingSecret or lock.redis.url, or leave redis.bundled.enabled unset (or true) for the bundled Redis" -}}
{{- end -}}
{{- if $redis.existingSecret -}}
{{- printf "%s/%s" $redis.existingSecret $redis.existingSecretKey -}}
{{- else if $redis.url -}}
{{- printf "%s-redis-url/url" (include "punctual.fullname" .) -}}
{{- end -}}
{{- /* The bundled Redis has no URL Secret: deployment.yaml composes the URL from its password. */ -}}
{{- end -}}

{{/* Checks that do not belong to one object. */}}
{{- define "punctual.validate" -}}
{{- if and (eq .Values.lock.backend "memory") (gt (int .Values.replicaCount) 1) -}}
{{- fail "lock.backend=memory works with one replica only: set replicaCount=1 or another backend" -}}
{{- end -}}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.service.enabled) -}}
{{- fail "metrics.serviceMonitor.enabled needs metrics.service.enabled" -}}
{{- end -}}
{{- if and .Values.metrics.serviceMonitor.enabled .Values.metrics.podMonitor.enabled -}}
{{- fail "choose one of metrics.serviceMonitor.enabled and metrics.podMonitor.enabled: both would scrape every replica twice" -}}
{{- end -}}
{{- if and .Values.redis.bundled.auth.existingSecret (not (include "punctual.redis.bundled" .)) -}}
{{- fail "redis.bundled.auth.existingSecret needs the bundled Redis (lock.backend=redis with no other Redis URL, or redis.bundled.enabled=true; for an external Redis use lock.redis.existingSecret, which holds the whole URL)" -}}
{{- end -}}
{{- if and .Values.redis.bundled.sentinel.enabled (not (include "punctual.redis.bundled" .)) -}}
{{- fail "redis.bundled.sentinel.enabled needs the bundled Redis (lock.backend=redis with no other Redis URL, or redis.bundled.enabled=true)" -}}
{{- end -}}
{{- if and (include "punctual.redis.sentinel" .) (gt (int (include "punctual.redis.waitReplicas" .)) 2) -}}
{{- fail "lock.redis.waitReplicas: the bundled Sentinel-managed Redis has two replicas, so at most 2" -}}
{{- end -}}
{{- if eq (int .Values.ports.metrics) (int .Values.ports.health) -}}
{{- fail "ports.metrics and ports.health must differ" -}}
{{- end -}}
{{- end -}}

{{/*
The rules the operator needs on namespaced resources, shared by the ClusterRole (all
namespaces) and the per-namespace Roles (watchNamespaces). Each rule names the code using it.
*/}}
{{- define "punctual.namespacedRules" -}}
# kopf's watch of ScheduledJobs (a list, then a watch), and the status store's and the
# kubernetes lock's read of one object (kube/status.py: StatusApi.read); spec.suspend set by the
# operator after spec.suspendAfterFailures failed runs in a row, a JSON merge patch with a
# resourceVersion precondition (kube/spec_api.py: SpecApi.suspend).
- apiGroups: ["punctual.dev"]
  resources: ["scheduledjobs"]
  verbs: ["get", "list", "watch", "patch"]
# kopf's watch of Calendars (a list, then a watch): the days that jobs of their namespace
# exclude by name, re-planned at an edit (controller/handlers.py, controller/calendars.py).
- apiGroups: ["punctual.dev"]
  resources: ["calendars"]
  verbs: ["list", "watch"]
# Status writes and the kubernetes lock's compare-and-swap: JSON merge patches of the status
# subresource (kube/status.py: StatusApi.patch). Never update, never the main resource.
- apiGroups: ["punctual.dev"]
  resources: ["scheduledjobs/status"]
  verbs: ["patch"]
# kopf's own Events (a handler that failed; its poster: POST core/v1 events).
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
# The operator's Events (kube/events.py: one events.k8s.io/v1 Event per job and reason, created once,
# then its series count patched at most once a minute).
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- if .Values.rbac.readSecrets }}
# headersFrom: reading the Secret a job names (kube/secrets.py: SecretReader.read).
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get"]
{{- end }}
{{- if .Values.jobTarget.enabled }}
# target.job: one batch/v1 Job per slot, watched to completion, deleted past spec.history or
# when concurrencyPolicy Replace cancels it.
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["create", "get", "list", "watch", "delete"]
# warm start: a warm Job's few pods, listed once at its slot, to say WarmStartNotReady and why.
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list"]
{{- end }}
{{- end -}}

{{/* kopf's cluster-scoped reads (see rbac.* in values.yaml); empty when none applies. */}}
{{- define "punctual.clusterReadRules" -}}
{{- if .Values.rbac.watchCustomResourceDefinitions }}
# kopf's resource observer: notices the ScheduledJob CRD being installed, changed or re-created.
- apiGroups: ["apiextensions.k8s.io"]
  resources: ["customresourcedefinitions"]
  verbs: ["list", "watch"]
{{- end }}
{{- if and .Values.watchNamespaces .Values.rbac.listNamespaces }}
# kopf's namespace observer (namespaced mode only): which watched namespaces exist right now.
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["list", "watch"]
{{- end }}
{{- end -}}

{{/* A resources block from {requests: {cpu, memory}, limits: {cpu, memory}}, empty values left out. */}}
{{- define "punctual.resources" -}}
{{- $resources := dict -}}
{{- range $kind := list "requests" "limits" -}}
{{- $values := dict -}}
{{- range $name, $value := (get $ $kind | default dict) -}}
{{- /* values.yaml keys are camelCase: ephemeralStorage is Kubernetes' ephemeral-storage. */ -}}
{{- if $value }}{{ $_ := set $values (ternary "ephemeral-storage" $name (eq $name "ephemeralStorage")) $value }}{{ end -}}
{{- end -}}
{{- if $values }}{{ $_ := set $resources $kind $values }}{{ end -}}
{{- end -}}
{{- toYaml $resources -}}
{{- end -}}
