{{/* Names and labels. */}}
{{- define "floe.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "floe.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "floe.labels" -}}
{{ include "floe.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The Secret holding the auth files, the store's DSN. */}}
{{- define "floe.authSecret" -}}
{{- .Values.auth.existingSecret | default (printf "%s-auth" (include "floe.fullname" .)) -}}
{{- end -}}

{{- define "floe.storeSecret" -}}
{{- .Values.store.existingSecret | default (printf "%s-store" (include "floe.fullname" .)) -}}
{{- end -}}

{{- define "floe.authUsed" -}}
{{- with .Values.auth -}}
{{- if or .tokenFileKey .jwksFileKey .oauthClientsFileKey .oauthSigningKeyFileKey }}true{{ end -}}
{{- end -}}
{{- end -}}

{{/* Settings that cannot work, refused at render time. */}}
{{- define "floe.validate" -}}
{{- $v := .Values -}}
{{- if not (has $v.mode (list "embedded" "scaleout")) -}}
{{- fail (printf "mode must be embedded or scaleout, not %q" $v.mode) -}}
{{- end -}}
{{- if eq $v.mode "scaleout" -}}
{{- if and (not $v.store.existingSecret) (not $v.store.dsn) -}}
{{- fail "scaleout mode needs the PostgreSQL DSN: store.existingSecret or store.dsn" -}}
{{- end -}}
{{- if lt (int $v.replicas) 1 -}}
{{- fail "replicas must be at least 1" -}}
{{- end -}}
{{- if and (not (hasPrefix "s3://" $v.warehouse.location)) (not $v.warehouse.existingClaim) -}}
{{- fail "scaleout mode needs a warehouse every replica reaches: an s3:// warehouse.location or a ReadWriteMany warehouse.existingClaim" -}}
{{- end -}}
{{- if and $v.auth.oauthClientsFileKey (not $v.auth.oauthSigningKeyFileKey) -}}
{{- fail "scaleout mode with OAuth clients needs auth.oauthSigningKeyFileKey: each replica would otherwise sign with its own key and refuse the others' tokens" -}}
{{- end -}}
{{- end -}}
{{- if and (not (include "floe.authUsed" .)) (not $v.auth.jwksUrl) -}}
{{- fail "floe needs authentication outside dev mode: set auth.tokenFileKey, auth.jwksFileKey, auth.jwksUrl or auth.oauthClientsFileKey" -}}
{{- end -}}
{{- if and $v.policy.bundleUrl $v.policy.files -}}
{{- fail "policy.bundleUrl and policy.files are two bundles: set one" -}}
{{- end -}}
{{- end -}}

{{- define "floe.terminationGracePeriodSeconds" -}}
{{- with .Values.shutdown -}}
{{- add .drainDelaySeconds .shutdownTimeoutSeconds .graceMarginSeconds -}}
{{- end -}}
{{- end -}}

{{/* The pod template both workloads share. */}}
{{- define "floe.podTemplate" -}}
{{- $v := .Values -}}
{{- $full := include "floe.fullname" . -}}
metadata:
  labels:
    {{- include "floe.selectorLabels" . | nindent 4 }}
    {{- with $v.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    {{- if $v.policy.files }}
    checksum/policy: {{ toJson $v.policy.files | sha256sum }}
    {{- end }}
    {{- if $v.auth.files }}
    checksum/auth: {{ toJson $v.auth.files | sha256sum }}
    {{- end }}
    {{- if $v.events.webhooks }}
    checksum/events: {{ $v.events.webhooks | sha256sum }}
    {{- end }}
    {{- with $v.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: {{ include "floe.terminationGracePeriodSeconds" . }}
  {{- with $v.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    fsGroup: 65532
    seccompProfile:
      type: RuntimeDefault
  containers:
    - name: floe
      image: {{ printf "%s:%s" $v.image.repository ($v.image.tag | default .Chart.AppVersion) | quote }}
      imagePullPolicy: {{ $v.image.pullPolicy }}
      args:
        - serve
        {{- range $v.extraArgs }}
        - {{ . | quote }}
        {{- end }}
      ports:
        - name: http
          containerPort: 8181
      env:
        - name: FLOE_ADDR
          value: "0.0.0.0:8181"
        - name: FLOE_LOG_FORMAT
          value: {{ $v.logFormat | quote }}
        - name: FLOE_LOG_LEVEL
          value: {{ $v.logLevel | quote }}
        - name: FLOE_DRAIN_DELAY
          value: {{ printf "%ds" (int $v.shutdown.drainDelaySeconds) | quote }}
        - name: FLOE_SHUTDOWN_TIMEOUT
          value: {{ printf "%ds" (int $v.shutdown.shutdownTimeoutSeconds) | quote }}
        - name: FLOE_WAREHOUSE_NAME
          value: {{ $v.warehouse.name | quote }}
        - name: FLOE_WAREHOUSE
          value: {{ $v.warehouse.location | quote }}
        {{- if eq $v.mode "embedded" }}
        - name: FLOE_DATA_DIR
          value: /data
        {{- else }}
        - name: FLOE_STORE
          valueFrom:
            secretKeyRef:
              name: {{ include "floe.storeSecret" . }}
              key: {{ $v.store.secretKey }}
        {{- end }}
        {{- with $v.warehouse.s3 }}
        {{- if .endpoint }}
        - name: FLOE_S3_ENDPOINT
          value: {{ .endpoint | quote }}
        {{- end }}
        {{- if .region }}
        - name: FLOE_S3_REGION
          value: {{ .region | quote }}
        {{- end }}
        {{- if .pathStyle }}
        - name: FLOE_S3_PATH_STYLE
          value: "true"
        {{- end }}
        {{- if .credentialsSecret }}
        - name: FLOE_S3_ACCESS_KEY_ID
          valueFrom:
            secretKeyRef:
              name: {{ .credentialsSecret }}
              key: FLOE_S3_ACCESS_KEY_ID
        - name: FLOE_S3_SECRET_ACCESS_KEY
          valueFrom:
            secretKeyRef:
              name: {{ .credentialsSecret }}
              key: FLOE_S3_SECRET_ACCESS_KEY
        {{- end }}
        {{- end }}
        {{- with $v.auth }}
        {{- if .tokenFileKey }}
        - name: FLOE_AUTH_TOKEN_FILE
          value: /etc/floe/auth/{{ .tokenFileKey }}
        {{- end }}
        {{- if .jwksFileKey }}
        - name: FLOE_AUTH_JWKS_FILE
          value: /etc/floe/auth/{{ .jwksFileKey }}
        {{- end }}
        {{- if .jwksUrl }}
        - name: FLOE_AUTH_JWKS_URL
          value: {{ .jwksUrl | quote }}
        {{- end }}
        {{- if .jwtIssuers }}
        - name: FLOE_AUTH_JWT_ISSUER
          value: {{ .jwtIssuers | quote }}
        {{- end }}
        {{- if .jwtAudiences }}
        - name: FLOE_AUTH_JWT_AUDIENCE
          value: {{ .jwtAudiences | quote }}
        {{- end }}
        {{- if .oauthClientsFileKey }}
        - name: FLOE_AUTH_OAUTH_CLIENTS_FILE
          value: /etc/floe/auth/{{ .oauthClientsFileKey }}
        {{- end }}
        {{- if .oauthSigningKeyFileKey }}
        - name: FLOE_AUTH_OAUTH_SIGNING_KEY_FILE
          value: /etc/floe/auth/{{ .oauthSigningKeyFileKey }}
        {{- end }}
        {{- if .oauthTokenTTL }}
        - name: FLOE_AUTH_OAUTH_TOKEN_TTL
          value: {{ .oauthTokenTTL | quote }}
        {{- end }}
        {{- end }}
        {{- if $v.policy.bundleUrl }}
        - name: FLOE_POLICY_BUNDLE_URL
          value: {{ $v.policy.bundleUrl | quote }}
        {{- else if $v.policy.files }}
        - name: FLOE_POLICY_BUNDLE
          value: /etc/floe/policy
        {{- end }}
        {{- if $v.policy.decisionLog }}
        - name: FLOE_POLICY_DECISION_LOG
          value: {{ $v.policy.decisionLog | quote }}
        {{- end }}
        {{- if $v.events.icebergEndpoint }}
        - name: FLOE_ICEBERG_EVENTS
          value: "true"
        {{- end }}
        {{- if $v.events.webhooks }}
        - name: FLOE_EVENT_WEBHOOKS
          value: /etc/floe/events/webhooks.json
        {{- end }}
        {{- with $v.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- if $v.events.webhookSecretsSecret }}
      envFrom:
        - secretRef:
            name: {{ $v.events.webhookSecretsSecret }}
      {{- end }}
      startupProbe:
        httpGet:
          path: /healthz
          port: http
        periodSeconds: {{ $v.probes.startup.periodSeconds }}
        failureThreshold: {{ $v.probes.startup.failureThreshold }}
      livenessProbe:
        httpGet:
          path: /healthz
          port: http
        periodSeconds: {{ $v.probes.liveness.periodSeconds }}
        timeoutSeconds: {{ $v.probes.liveness.timeoutSeconds }}
        failureThreshold: {{ $v.probes.liveness.failureThreshold }}
      readinessProbe:
        httpGet:
          path: /readyz
          port: http
        periodSeconds: {{ $v.probes.readiness.periodSeconds }}
        timeoutSeconds: {{ $v.probes.readiness.timeoutSeconds }}
        failureThreshold: {{ $v.probes.readiness.failureThreshold }}
      securityContext:
        allowPrivilegeEscalation: false
        readOnlyRootFilesystem: true
        capabilities:
          drop: [ALL]
      {{- with $v.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      volumeMounts:
        # Garbage collection keeps its mark database in /tmp.
        - name: tmp
          mountPath: /tmp
        {{- if eq $v.mode "embedded" }}
        - name: data
          mountPath: /data
        {{- end }}
        {{- if not (hasPrefix "s3://" $v.warehouse.location) }}
        - name: warehouse
          mountPath: {{ $v.warehouse.location }}
        {{- end }}
        {{- if include "floe.authUsed" . }}
        - name: auth
          mountPath: /etc/floe/auth
          readOnly: true
        {{- end }}
        {{- /* One subPath mount per file: a ConfigMap directory mount
             hides its files behind ..data links the bundle loader does
             not follow. The checksum annotation rolls the pods instead. */}}
        {{- if $v.events.webhooks }}
        - name: events
          mountPath: /etc/floe/events
          readOnly: true
        {{- end }}
        {{- range $i, $path := keys $v.policy.files | sortAlpha }}
        - name: policy
          mountPath: /etc/floe/policy/{{ $path }}
          subPath: file-{{ $i }}
          readOnly: true
        {{- end }}
  volumes:
    - name: tmp
      emptyDir: {}
    {{- if and (not (hasPrefix "s3://" $v.warehouse.location)) $v.warehouse.existingClaim }}
    - name: warehouse
      persistentVolumeClaim:
        claimName: {{ $v.warehouse.existingClaim }}
    {{- end }}
    {{- if include "floe.authUsed" . }}
    - name: auth
      secret:
        secretName: {{ include "floe.authSecret" . }}
        defaultMode: 0440
    {{- end }}
    {{- if $v.policy.files }}
    - name: policy
      configMap:
        name: {{ $full }}-policy
    {{- end }}
    {{- if $v.events.webhooks }}
    - name: events
      configMap:
        name: {{ $full }}-events
    {{- end }}
  {{- with $v.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
