{{/* Names and labels, the usual way: <release>-flagpole unless the release is named flagpole. */}}
{{- define "flagpole.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "flagpole.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "flagpole.selectorLabels" -}}
app.kubernetes.io/name: {{ include "flagpole.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "flagpole.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "flagpole.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The Secret holding config.json: the user's, or the one this chart renders. */}}
{{- define "flagpole.configSecretName" -}}
{{- if .Values.existingConfigSecret.name -}}
{{- .Values.existingConfigSecret.name -}}
{{- else -}}
{{- printf "%s-config" (include "flagpole.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* Whether the Redis URL comes from a Secret (then it travels as $FLAGPOLE_FLEET_REDIS_URL,
which Flagpole merges into the file's flagpole.fleet). */}}
{{- define "flagpole.fleetFromSecret" -}}
{{- if .Values.fleet.redisUrlSecret.name }}true{{ end -}}
{{- end -}}

{{/* The `flagpole` section: config.flagpole, the snapshot directory unless set, and with a
Redis URL from a Secret the fleet's lease (the URL itself is merged in by Flagpole from the
variable FLAGPOLE_FLEET_REDIS_URL, so it is never written into a rendered object). */}}
{{- define "flagpole.section" -}}
{{- $section := deepCopy (.Values.config.flagpole | default dict) -}}
{{- if not (hasKey $section "snapshot_dir") -}}
{{- $_ := set $section "snapshot_dir" .Values.snapshotDir.path -}}
{{- end -}}
{{- if include "flagpole.fleetFromSecret" . -}}
{{- $fleet := deepCopy (get $section "fleet" | default dict) -}}
{{- $_ := set $fleet "lease_seconds" .Values.fleet.leaseSeconds -}}
{{- $_ := set $section "fleet" $fleet -}}
{{- end -}}
{{- toJson $section -}}
{{- end -}}

{{/* config.json as rendered from `config`: server.port is `port`, the `flagpole` section as
above. */}}
{{- define "flagpole.configJson" -}}
{{- $config := deepCopy (.Values.config | default dict) -}}
{{- $server := deepCopy (get $config "server" | default dict) -}}
{{- $_ := set $server "port" (int .Values.port) -}}
{{- $_ := set $config "server" $server -}}
{{- $_ := set $config "flagpole" (include "flagpole.section" . | fromJson) -}}
{{- toPrettyJson $config -}}
{{- end -}}

{{/* "true" when no environment is configured anywhere the chart can see (config, an existing
Secret, variables): the pods then serve the bundled example (`serve --example`), as the image
does when it has no configuration. */}}
{{- define "flagpole.servesExample" -}}
{{- $c := .Values.config | default dict -}}
{{- $configured := or .Values.existingConfigSecret.name .Values.extraEnvFrom $c.environment_key_pairs $c.proxy_key (get ($c.flagpole | default dict) "documents") -}}
{{- range .Values.extraEnv -}}
{{- if has (upper .name) (list "ENVIRONMENT_KEY_PAIRS" "PROXY_KEY" "FLAGPOLE") -}}{{- $configured = true -}}{{- end -}}
{{- end -}}
{{- if not $configured }}true{{ end -}}
{{- end -}}
