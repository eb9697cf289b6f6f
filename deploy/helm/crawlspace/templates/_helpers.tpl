{{/*
The release's objects are named after it, cut to the 63 characters a Service's name may have.
A process of a shared crawl is named after its pod through the downward API (metadata.name,
whole), never its host name, which Kubernetes cuts to 63 characters.
*/}}
{{- define "crawlspace.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "crawlspace.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "crawlspace.selectorLabels" -}}
app.kubernetes.io/name: {{ include "crawlspace.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "crawlspace.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "crawlspace.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: {{ ternary "crawler-shared" "crawler" (eq .Values.mode "shared") }}
{{- end -}}

{{/*
crawlspace.config is the configuration file: the user's, checked against the shape the chart
needs, with the keys the chart owns added.
*/}}
{{- define "crawlspace.config" -}}
{{- if not (has .Values.mode (list "single" "shared")) -}}
{{- fail (printf "mode: %q is neither single (one process, its state on a volume) nor shared (processes sharing the crawl through Elasticsearch)" (toString .Values.mode)) -}}
{{- end -}}
{{- $cfg := deepCopy (.Values.config | default dict) -}}
{{- if not (kindIs "map" $cfg) -}}
{{- fail "config: must be crawlspace's configuration as a YAML mapping (docs/config.md)" -}}
{{- end -}}
{{- if not $cfg.sources -}}
{{- fail "config.sources: give the crawl's sources in config (docs/config.md); deploy/helm/examples has a values file for each shape" -}}
{{- end -}}
{{- range $key := list "state_dir" "metrics_addr" -}}
{{- if hasKey $cfg $key -}}
{{- fail (printf "config.%s: the chart sets it (state_dir /state, service.address from metrics.port): leave it out" $key) -}}
{{- end -}}
{{- end -}}
{{- $service := $cfg.service | default dict -}}
{{- if hasKey $service "address" -}}
{{- fail "config.service.address: the chart sets it from metrics.port (the metrics, the status page and the control API): leave it out" -}}
{{- end -}}
{{- $cluster := $cfg.cluster | default dict -}}
{{- if eq .Values.mode "shared" -}}
{{- if not $cluster.state_index -}}
{{- fail "config.cluster.state_index: mode shared keeps the crawl's state in Elasticsearch, in indices with this prefix (docs/cluster.md)" -}}
{{- end -}}
{{- if not (or (hasKey $cfg "elasticsearch") (hasKey $cluster "elasticsearch")) -}}
{{- fail "config.elasticsearch: mode shared needs the cluster the state lives in (elasticsearch or cluster.elasticsearch)" -}}
{{- end -}}
{{- range $key := list "node_name" "node_name_env" -}}
{{- if hasKey $cluster $key -}}
{{- fail (printf "config.cluster.%s: the chart names each process after its pod: leave it out" $key) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $cluster "node_name_env" "POD_NAME" -}}
{{- $_ := set $cfg "cluster" $cluster -}}
{{- else if $cluster.state_index -}}
{{- fail "config.cluster.state_index: mode single keeps the state on its volume; for a crawl shared through Elasticsearch use mode shared" -}}
{{- end -}}
{{- $_ := set $cfg "state_dir" "/state" -}}
{{- $_ := set $service "address" (printf ":%d" (int .Values.metrics.port)) -}}
{{- $_ := set $cfg "service" $service -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/*
crawlspace.pod is the pod template of either shape.
*/}}
{{- define "crawlspace.pod" -}}
metadata:
  labels:
    {{- include "crawlspace.selectorLabels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    checksum/config: {{ include "crawlspace.config" . | sha256sum }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  automountServiceAccountToken: false
  enableServiceLinks: false
  terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml .Values.podSecurityContext | nindent 4 }}
  containers:
    - name: crawlspace
      image: {{ printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) | quote }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      {{- with .Values.image.command }}
      command:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      args: [run, -config, /etc/crawlspace/crawlspace.yaml]
      env:
        {{- if eq .Values.mode "shared" }}
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        {{- end }}
        - name: XDG_CACHE_HOME
          value: /tmp/cache
        {{- with .Values.env }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with .Values.envFrom }}
      envFrom:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      ports:
        - name: metrics
          containerPort: {{ .Values.metrics.port }}
          protocol: TCP
      startupProbe:
        httpGet:
          path: /healthz
          port: metrics
        {{- toYaml .Values.probes.startup | nindent 8 }}
      livenessProbe:
        httpGet:
          path: /healthz
          port: metrics
        {{- toYaml .Values.probes.liveness | nindent 8 }}
      readinessProbe:
        httpGet:
          path: /readyz
          port: metrics
        {{- toYaml .Values.probes.readiness | nindent 8 }}
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
      securityContext:
        {{- toYaml .Values.securityContext | nindent 8 }}
      volumeMounts:
        - name: config
          mountPath: /etc/crawlspace
          readOnly: true
        - name: state
          mountPath: /state
        - name: tmp
          mountPath: /tmp
        {{- range .Values.secretFiles }}
        - name: {{ printf "secret-%s" .secretName | trunc 63 | trimSuffix "-" }}
          mountPath: {{ .mountPath | default (printf "/secrets/%s" .secretName) }}
          readOnly: true
        {{- end }}
        {{- with .Values.extraVolumeMounts }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
  volumes:
    - name: config
      configMap:
        name: {{ include "crawlspace.fullname" . }}
    - name: tmp
      emptyDir:
        sizeLimit: {{ .Values.tmp.sizeLimit }}
    {{- if eq .Values.mode "shared" }}
    # The state is in Elasticsearch: state_dir holds nothing, but is the process's own.
    - name: state
      emptyDir:
        sizeLimit: 64Mi
    {{- else if .Values.persistence.existingClaim }}
    - name: state
      persistentVolumeClaim:
        claimName: {{ .Values.persistence.existingClaim }}
    {{- end }}
    {{- range .Values.secretFiles }}
    - name: {{ printf "secret-%s" .secretName | trunc 63 | trimSuffix "-" }}
      secret:
        secretName: {{ .secretName }}
        defaultMode: 288 # 0440: the owner and the pod's fsGroup read it
        {{- with .items }}
        items:
          {{- toYaml . | nindent 10 }}
        {{- end }}
    {{- end }}
    {{- with .Values.extraVolumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
