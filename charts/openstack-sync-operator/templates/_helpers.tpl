{{/* Names and labels. */}}
{{- define "oso.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "oso.fullname" -}}
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

{{- define "oso.selectorLabels" -}}
app.kubernetes.io/name: {{ include "oso.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "oso.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "oso.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "oso.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "oso.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
oso.config computes, once, everything the templates derive from plugins and pluginData:
  hooks: name -> {enabled, file, sha256, wrapper, crd: {group, version, kind, plural, status},
         otherCRD: the same of the other profile's CRD, when the plugin names one}
  hookEnv: the hook environment (name -> string), over every hook, enabled or not
  env: the operator environment (name -> string)
  memoryLimitMiB, memoryRequestMiB: the pod's memory derived from the enabled plugins' limits
Rendering fails with a message naming the value at fault.
*/}}
{{- define "oso.config" -}}
{{- $hooks := dict -}}
{{- $memoryLimit := int (.Values.memory | default dict).shellOperatorMiB -}}
{{- $memoryRequest := $memoryLimit -}}
{{- /* CR watches of the enabled plugins: shell-operator keeps each one's filtered objects. */ -}}
{{- $watches := 0 -}}
{{- /* A shard's hook watches its kind twice: its own CRs and every shard's claims. */ -}}
{{- $sharded := or (not (empty ((.Values.shard | default dict).labelSelector))) (not (empty ((.Values.shard | default dict).namespaces))) -}}
{{- $hookEnv := dict -}}
{{- range $name := keys .Values.plugins | sortAlpha -}}
{{- if not (hasKey $.Values.pluginData $name) -}}
{{- fail (printf "plugins.%s has no pluginData.%s entry describing the plugin" $name $name) -}}
{{- end -}}
{{- end -}}
{{- /* The cache volume holds, per enabled plugin, its compiled code, shaped module and lifted data
(compilationCache.moduleMiB), its run replay record and its convergence memo, and the modules
pulled from a registry; the memo gets what is left, shared out, at most memoMaxMiB each. The memo
and the record are each counted twice (each is rewritten beside its old file), so the hooks can
never fill the volume and have the pod evicted (docs/operating.md, "What persists between runs"). */ -}}
{{- $cc := .Values.compilationCache | default dict -}}
{{- $sizeLimit := toString ($cc.sizeLimit | default "") -}}
{{- if not (regexMatch "^[0-9]+(Ki|Mi|Gi)?$" $sizeLimit) -}}
{{- fail (printf "compilationCache.sizeLimit %q: write it as a whole number of bytes, Ki, Mi or Gi (e.g. 256Mi)" $sizeLimit) -}}
{{- end -}}
{{- $n := int64 (regexReplaceAll "[^0-9]" $sizeLimit "") -}}
{{- $unit := regexReplaceAll "[0-9]" $sizeLimit "" -}}
{{- $cacheMiB := 0 -}}
{{- if eq $unit "Ki" -}}{{- $cacheMiB = div $n 1024 -}}{{- else if eq $unit "Mi" -}}{{- $cacheMiB = $n -}}{{- else if eq $unit "Gi" -}}{{- $cacheMiB = mul $n 1024 -}}{{- else -}}{{- $cacheMiB = div $n 1048576 -}}{{- end -}}
{{- $enabledCount := 0 -}}
{{- $pulledCount := 0 -}}
{{- /* A run replay record (docs/operating.md, "The run replay") holds the reads of the plugin's
last converged run and the notes it repeats: memory.crs of the plugin's measured bytes per CR
(pluginData.<name>.replayBytesPerCR, else compilationCache.replayBytesPerCR) and a quarter more,
at least 1 MiB, at most the 32 MiB past which the host records no run; each hook is given its
room as OPENSTACK_SYNC_REPLAY_MAX_MIB below. */ -}}
{{- $replayMiB := 0 -}}
{{- $replayRoom := dict -}}
{{- $crs := int ((.Values.memory | default dict).crs | default 0) -}}
{{- range $name := keys .Values.pluginData -}}
{{- $pd := get $.Values.pluginData $name | default dict -}}
{{- $perCR := int ($pd.replayBytesPerCR | default ($cc.replayBytesPerCR | default 1024)) -}}
{{- $room := min 32 (max 1 (div (add (div (mul $crs $perCR 5) 4) 1048575) 1048576)) -}}
{{- $_ := set $replayRoom $name $room -}}
{{- if and $pd.hook (eq (toString (get $.Values.plugins $name)) "true") -}}
{{- $enabledCount = add1 $enabledCount -}}
{{- if ($pd.plugin | default dict).source -}}{{- $pulledCount = add1 $pulledCount -}}{{- end -}}
{{- $replayMiB = add $replayMiB $room -}}
{{- end -}}
{{- end -}}
{{- /* The volume each enabled plugin's memo may take (each counted twice), the most any memo gets. */ -}}
{{- $memoShareMiB := 1024 -}}
{{- if gt $enabledCount 0 -}}
{{- $left := sub (sub (sub $cacheMiB (mul $enabledCount (int ($cc.moduleMiB | default 40)))) (mul $pulledCount 16)) (mul 2 $replayMiB) -}}
{{- $memoShareMiB = div $left (mul 2 $enabledCount) -}}
{{- if lt $memoShareMiB 1 -}}
{{- fail (printf "compilationCache.sizeLimit %s is too small for %d enabled plugins (%d pulled from a registry): each needs compilationCache.moduleMiB (%d) for its compiled code, 16 MiB for a pulled module, twice its run replay record (%d MiB in all at memory.crs %d) and at least 2 MiB for its convergence memo; set it to at least %dMi" $sizeLimit $enabledCount $pulledCount (int ($cc.moduleMiB | default 40)) (mul 2 $replayMiB) $crs (add (mul $enabledCount (add (int ($cc.moduleMiB | default 40)) 2)) (mul $pulledCount 16) (mul 2 $replayMiB))) -}}
{{- end -}}
{{- end -}}
{{- range $name := keys .Values.pluginData | sortAlpha -}}
{{- $pd := get $.Values.pluginData $name | default dict -}}
{{- $hook := $pd.hook | default dict -}}
{{- if $hook -}}
{{- $enabled := eq (toString (get $.Values.plugins $name)) "true" -}}
{{- $plugin := $pd.plugin | default dict -}}
{{- /* An OCI source wins over file (a first-party plugin keeps its default file in the values):
the init container pulls it by digest into the cache volume, and the hook runs that copy. */ -}}
{{- $source := $plugin.source | default "" -}}
{{- $file := $plugin.file | default "" -}}
{{- if $source -}}
{{- $file = printf "%s/%s.wasm" (include "oso.pluginsDir" $) $name -}}
{{- end -}}
{{- $file = required (printf "pluginData.%s.plugin needs file (a module in the image) or source (oci://...@sha256:...)" $name) $file -}}
{{- $sha := $plugin.sha256 | default "" -}}
{{- if and $enabled (not $sha) -}}
{{- fail (printf "pluginData.%s.plugin.sha256 is required because plugins.%s is true: pin the sha256 digest of %s (the image lists it in /plugins/SHA256SUMS)" $name $name $file) -}}
{{- end -}}
{{- $h := dict "enabled" $enabled "file" $file "sha256" $sha "wrapper" (base $file | trimSuffix ".wasm") "source" (trimPrefix "oci://" $source) -}}
{{- /* The host reads its sandbox limits from process-wide variables; each hook is its own process,
so the hook's wrapper exports them and every plugin gets its own. */ -}}
{{- $limits := $plugin.limits | default dict -}}
{{- $exports := list -}}
{{- if $limits.callTimeout -}}{{- $exports = append $exports (printf "OPENSTACK_SYNC_WASM_CALL_TIMEOUT=%s" (toString $limits.callTimeout)) -}}{{- end -}}
{{- if $limits.memoryMiB -}}{{- $exports = append $exports (printf "OPENSTACK_SYNC_WASM_MEMORY_MIB=%s" (toString $limits.memoryMiB)) -}}{{- end -}}
{{- if $limits.poolSize -}}{{- $exports = append $exports (printf "OPENSTACK_SYNC_WASM_POOL_SIZE=%s" (toString $limits.poolSize)) -}}{{- end -}}
{{- /* The hook's share of the pod's memory (docs/reliability.md, "Memory per instance"): loading
the module, then poolSize instances, each holding at most its memory limit plus the host's
overhead, and the convergence memo (memoMemoryFactor times its bound). The defaults are the host's
(32 MiB, 2 instances). GOMEMLIMIT has the Go collector free garbage before the hook reaches its
share. */ -}}
{{- $mem := $.Values.memory | default dict -}}
{{- /* The memo's bound (OPENSTACK_SYNC_MEMO_MAX_MIB): compilationCache.memoMaxMiB when set, at
most the plugin's share of the volume. Unset, it follows the CRs (docs/scaling.md, "The chart's
memory"): memory.crs records of the plugin's measured size (pluginData.<name>.memoBytesPerCR, else
compilationCache.memoBytesPerCR) and a quarter more, at least compilationCache.memoMinMiB; a
bound the volume cannot hold fails rendering, as a memo smaller than the CRs would reconcile the
rest in full every run. */ -}}
{{- $memoMiB := 0 -}}
{{- if $cc.memoMaxMiB -}}
{{- $memoMiB = min (int $cc.memoMaxMiB) $memoShareMiB -}}
{{- else -}}
{{- $perCR := int ($pd.memoBytesPerCR | default ($cc.memoBytesPerCR | default 1024)) -}}
{{- $neededMiB := div (add (div (mul (int ($mem.crs | default 0)) $perCR 5) 4) 1048575) 1048576 -}}
{{- if and $enabled (gt $neededMiB $memoShareMiB) -}}
{{- fail (printf "compilationCache.sizeLimit %s leaves %d MiB for the convergence memo of each of the %d enabled plugins (after their compiled code and run replay records), but memory.crs %d needs %d MiB for pluginData.%s (%d bytes per CR): raise compilationCache.sizeLimit to at least %dMi, or set compilationCache.memoMaxMiB to accept a memo that holds fewer CRs" $sizeLimit $memoShareMiB $enabledCount (int $mem.crs) $neededMiB $name $perCR (add (mul $enabledCount (add (int ($cc.moduleMiB | default 40)) (mul 2 $neededMiB))) (mul $pulledCount 16) (mul 2 $replayMiB))) -}}
{{- end -}}
{{- $memoMiB = min (max $neededMiB (int ($cc.memoMinMiB | default 4))) $memoShareMiB -}}
{{- end -}}
{{- /* What a run holds for its CRs (each spec and status, the memo's records) comes on top of the
sandbox's bound, hookMiBPer1000CRs for every 1,000 of memory.crs, rounded up (docs/scaling.md). */ -}}
{{- $crsMiB := div (add (mul (int ($mem.hookMiBPer1000CRs | default 0)) (int ($mem.crs | default 0))) 999) 1000 -}}
{{- $share := add (int $mem.loadMiB) (mul (int ($limits.poolSize | default 2)) (add (int ($limits.memoryMiB | default 32)) (int $mem.instanceOverheadMiB))) (mul (int $mem.memoMemoryFactor) $memoMiB) $crsMiB -}}
{{- $exports = append $exports (printf "GOMEMLIMIT=%dMiB" (int $share)) -}}
{{- $exports = append $exports (printf "OPENSTACK_SYNC_MEMO_MAX_MIB=%d" (int $memoMiB)) -}}
{{- /* The room kept above for the plugin's run replay record is its bound: a site with more CRs
than memory.crs loses the replay (the host says so) instead of filling the volume. */ -}}
{{- $exports = append $exports (printf "OPENSTACK_SYNC_REPLAY_MAX_MIB=%d" (int (get $replayRoom $name))) -}}
{{- if $enabled -}}
{{- $memoryLimit = add $memoryLimit $share -}}
{{- $memoryRequest = add $memoryRequest (int $mem.hookTypicalMiB) $crsMiB -}}
{{- $watches = add $watches (ternary 2 1 $sharded) -}}
{{- end -}}
{{- $_ := set $h "exports" $exports -}}
{{- $p := $hook.envPrefix | default "" -}}
{{- /* The wrapper names the prefix, so the host reads the pin and the settings under the
operator's prefix, never under one the module declares for itself. */ -}}
{{- $_ := set $h "prefixFlag" (ternary (printf " --env-prefix %s" $p) "" (ne $p "")) -}}
{{- /* The operator names the binding, which is also the shell-operator queue: a module's metadata
never chooses it, so no plugin can join (and hold) another plugin's queue. */ -}}
{{- $binding := $hook.binding | default (kebabcase $name) -}}
{{- if $hook.crd -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $binding) -}}
{{- fail (printf "pluginData.%s.hook.binding %q is not a lower-case DNS label" $name $binding) -}}
{{- end -}}
{{- range $other, $oh := $hooks -}}
{{- if eq ($oh.binding | default "") $binding -}}
{{- fail (printf "pluginData.%s and pluginData.%s share the binding (and queue) %s; set hook.binding on one" $other $name $binding) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $h "binding" $binding -}}
{{- $_ := set $h "bindingFlag" (printf " --binding %s" $binding) -}}
{{- end -}}
{{- $env := dict -}}
{{- if $p -}}
{{- $_ := set $env (printf "%s_ENABLED" $p) (ternary "true" "false" $enabled) -}}
{{- /* A plugin's CRD is a file of the chart (hook.crd) or, for a plugin the chart does not ship,
the CRD itself in the values (hook.crdYAML, e.g. helm --set-file), so nobody forks the chart. */ -}}
{{- if and $hook.crd $hook.crdYAML -}}
{{- fail (printf "pluginData.%s.hook: set crd or crdYAML, not both" $name) -}}
{{- end -}}
{{- /* The profile (docs/migrating.md): the release's compatibility.profile unless the plugin
names its own. Under understack a plugin's CRD is the original operator's (hook.profiles.understack.crd);
a plugin without one keeps this project's identifiers whatever the release says. The other
profile's CRD is named too, so a hook refuses to act while CRs of both exist. */ -}}
{{- $profiles := $hook.profiles | default dict -}}
{{- $understackCRD := (get $profiles "understack" | default dict).crd | default "" -}}
{{- $profile := $hook.profile | default "" -}}
{{- if not $profile -}}
{{- $profile = ternary ($.Values.compatibility.profile | default "openstack-sync") "openstack-sync" (ne $understackCRD "") -}}
{{- end -}}
{{- if not (has $profile (list "openstack-sync" "understack")) -}}
{{- fail (printf "pluginData.%s.hook.profile is %q; want openstack-sync or understack" $name $profile) -}}
{{- end -}}
{{- $crdFile := $hook.crd | default "" -}}
{{- $otherFile := $understackCRD -}}
{{- if eq $profile "understack" -}}
{{- if not $understackCRD -}}
{{- fail (printf "pluginData.%s.hook.profile is understack but the plugin names no CRD of the original operator (hook.profiles.understack.crd)" $name) -}}
{{- end -}}
{{- $crdFile = $understackCRD -}}
{{- $otherFile = $hook.crd | default "" -}}
{{- $_ := set $env (printf "%s_PROFILE" $p) $profile -}}
{{- end -}}
{{- if or $crdFile $hook.crdYAML -}}
{{- $crd := include "oso.crd" (list $ $name $crdFile $hook.crdYAML) | fromYaml -}}
{{- $_ := set $env (printf "%s_CRD_API_VERSION" $p) (printf "%s/%s" $crd.group $crd.version) -}}
{{- $_ := set $env (printf "%s_CRD_KIND" $p) $crd.kind -}}
{{- $_ := set $env (printf "%s_CRD_RESOURCE" $p) (printf "%s.%s" $crd.plural $crd.group) -}}
{{- $_ := set $env (printf "%s_STATUS_ENABLED" $p) (ternary "true" "false" $crd.status) -}}
{{- $_ := set $h "crd" $crd -}}
{{- end -}}
{{- if and $otherFile $h.crd -}}
{{- $other := include "oso.crd" (list $ $name $otherFile "") | fromYaml -}}
{{- $_ := set $env (printf "%s_OTHER_CRD_API_VERSION" $p) (printf "%s/%s" $other.group $other.version) -}}
{{- $_ := set $env (printf "%s_OTHER_CRD_RESOURCE" $p) (printf "%s.%s" $other.plural $other.group) -}}
{{- $_ := set $h "otherCRD" $other -}}
{{- end -}}
{{- if $sha -}}
{{- $_ := set $env (printf "%s_PLUGIN_SHA256" $p) $sha -}}
{{- end -}}
{{- if kindIs "slice" $plugin.grants -}}
{{- $_ := set $env (printf "%s_GRANTS" $p) (toJson $plugin.grants) -}}
{{- end -}}
{{- /* The sources outside OpenStack the operator allow-lists for the plugin (docs/abi.md
       section 8): no secret, so they travel as the hook variable the host reads. */ -}}
{{- with $pd.sources -}}
{{- $_ := set $env (printf "%s_SOURCES" $p) (toJson .) -}}
{{- end -}}
{{- range $k := keys ($hook.env | default dict) | sortAlpha -}}
{{- $n := printf "%s_%s" $p $k -}}
{{- if hasKey $env $n -}}
{{- fail (printf "pluginData.%s.hook.env.%s: %s is already set by the chart" $name $k $n) -}}
{{- end -}}
{{- $_ := set $env $n (toString (get $hook.env $k)) -}}
{{- end -}}
{{- /* SYNC_CRONTAB "H ...": the minute is derived from the binding, so the plugins' periodic full
       runs do not all hit OpenStack at the same minute (docs/operating.md, "Cadence"). */ -}}
{{- $cronKey := printf "%s_SYNC_CRONTAB" $p -}}
{{- $cron := get $env $cronKey | default "" -}}
{{- if hasPrefix "H " $cron -}}
{{- $_ := set $env $cronKey (printf "%d%s" (mod (atoi (adler32sum $binding)) 60) (trimPrefix "H" $cron)) -}}
{{- end -}}
{{- end -}}
{{- range $n := keys $env | sortAlpha -}}
{{- if hasKey $hookEnv $n -}}
{{- fail (printf "pluginData.%s: %s is set by two hooks (is the envPrefix %s used twice?)" $name $n $p) -}}
{{- end -}}
{{- $_ := set $hookEnv $n (get $env $n) -}}
{{- end -}}
{{- $_ := set $hooks $name $h -}}
{{- end -}}
{{- end -}}
{{- $env := dict -}}
{{- $reserved := list "POD_NAMESPACE" "OPENSTACK_SYNC_CACHE_DIR" "SHELL_OPERATOR_HOOKS_DIR" "SHELL_OPERATOR_TMP_DIR" "SHELL_OPERATOR_LISTEN_PORT" "DEBUG_UNIX_SOCKET" "OPENSTACK_SYNC_LEASE_NAME" "OPENSTACK_SYNC_LEASE_NAMESPACE" "OPENSTACK_SYNC_LEASE_HOLDER" "OPENSTACK_SYNC_LEASE_DURATION" "OPENSTACK_SYNC_SHARD_LABEL_SELECTOR" "OPENSTACK_SYNC_SHARD_NAMESPACES" "OPENSTACK_SYNC_KUBE_QPS" "OPENSTACK_SYNC_KUBE_BURST" -}}
{{- range $n := keys (.Values.env | default dict) | sortAlpha -}}
{{- if hasKey $hookEnv $n -}}
{{- fail (printf "env.%s collides with a variable a plugin's hook sets" $n) -}}
{{- end -}}
{{- if has $n $reserved -}}
{{- fail (printf "env.%s is set by the chart itself" $n) -}}
{{- end -}}
{{- $_ := set $env $n (toString (get $.Values.env $n)) -}}
{{- end -}}
{{- /* shell-operator holds each watch's filtered objects: shellOperatorMiBPer1000CRs for every
1,000 of memory.crs, rounded up (docs/scaling.md). */ -}}
{{- $soCrsMiB := div (add (mul (int ((.Values.memory | default dict).shellOperatorMiBPer1000CRs | default 0)) (int ((.Values.memory | default dict).crs | default 0)) $watches) 999) 1000 -}}
{{- $memoryLimit = add $memoryLimit $soCrsMiB -}}
{{- $memoryRequest = add $memoryRequest $soCrsMiB -}}
{{- toYaml (dict "hooks" $hooks "hookEnv" $hookEnv "env" $env "memoryLimitMiB" $memoryLimit "memoryRequestMiB" $memoryRequest) -}}
{{- end -}}

{{/*
oso.crd reads a CRD's identity: (list $ pluginName file yaml), the file of the chart or, without
one, the manifest itself. It returns {group, version, kind, plural, status} as YAML, or fails
naming the value at fault.
*/}}
{{- define "oso.crd" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- $file := index . 2 -}}
{{- $raw := index . 3 -}}
{{- if $file -}}{{- $raw = $root.Files.Get $file -}}{{- end -}}
{{- if not $raw -}}
{{- fail (printf "pluginData.%s.hook.crd: %s is not a file in the chart" $name $file) -}}
{{- end -}}
{{- $crdName := $file | default "hook.crdYAML" -}}
{{- $crd := fromYaml $raw -}}
{{- if ne ($crd.kind | default "") "CustomResourceDefinition" -}}
{{- fail (printf "pluginData.%s.hook.crd: %s is not a CustomResourceDefinition" $name $crdName) -}}
{{- end -}}
{{- $spec := $crd.spec | default dict -}}
{{- $names := $spec.names | default dict -}}
{{- $group := required (printf "pluginData.%s.hook.crd: %s has no spec.group" $name $crdName) $spec.group -}}
{{- $kind := required (printf "pluginData.%s.hook.crd: %s has no spec.names.kind" $name $crdName) $names.kind -}}
{{- $plural := required (printf "pluginData.%s.hook.crd: %s has no spec.names.plural" $name $crdName) $names.plural -}}
{{- $storage := "" -}}
{{- $status := false -}}
{{- range $v := $spec.versions | default list -}}
{{- if $v.storage -}}{{- $storage = $v.name -}}{{- end -}}
{{- if and $v.subresources (hasKey $v.subresources "status") -}}{{- $status = true -}}{{- end -}}
{{- end -}}
{{- if not $storage -}}
{{- fail (printf "pluginData.%s.hook.crd: %s has no storage version" $name $crdName) -}}
{{- end -}}
{{- toYaml (dict "group" $group "version" $storage "kind" $kind "plural" $plural "status" $status) -}}
{{- end -}}

{{/* Where plugins pulled from an OCI registry are kept: the cache volume, shared with the hooks. */}}
{{- define "oso.pluginsDir" -}}/var/cache/openstack-sync/plugins{{- end -}}

{{/* oso.hasSource: "true" when an enabled plugin comes from an OCI registry. */}}
{{- define "oso.hasSource" -}}
{{- $cfg := include "oso.config" . | fromYaml -}}
{{- $any := false -}}
{{- range $name, $h := $cfg.hooks -}}
{{- if and $h.enabled $h.source -}}{{- $any = true -}}{{- end -}}
{{- end -}}
{{- $any -}}
{{- end -}}

{{/*
oso.verifyScript is the init container's script: it pulls each enabled plugin with an OCI source by
digest (the host binary's plugin pull), fails the pod when an enabled plugin is missing or its digest
differs from the pin, then writes one hook wrapper per enabled plugin into HOOKS_DIR.
The wrappers are written here, not shipped in the image, so the plugin file named in the values is
the one the hook runs.
*/}}
{{- define "oso.verifyScript" -}}
{{- $cfg := include "oso.config" . | fromYaml -}}
set -eu
fail() { echo "verify-plugins: $*" >&2; exit 1; }
[ -x "$HOST_BINARY" ] || fail "host binary missing or not executable: $HOST_BINARY"
{{- range $name := keys $cfg.hooks | sortAlpha }}
{{- $h := get $cfg.hooks $name }}
{{- if $h.enabled }}
{{- if $h.source }}
mkdir -p {{ dir $h.file | quote }}
"$HOST_BINARY" plugin pull{{ if $.Values.pluginRegistry.insecure }} --insecure{{ end }} -o {{ $h.file | quote }} --sha256 {{ $h.sha256 | quote }} {{ $h.source | quote }} || fail {{ printf "enabled plugin %s: cannot pull %s" $name $h.source | quote }}
{{- end }}
[ -f {{ $h.file | quote }} ] || fail {{ printf "enabled plugin %s missing: %s" $name $h.file | quote }}
got=$(sha256sum {{ $h.file | quote }} | cut -d' ' -f1)
[ "$got" = {{ $h.sha256 | quote }} ] || fail "enabled plugin {{ $name }}: {{ $h.file }} has sha256 $got, the values pin {{ $h.sha256 }}"
printf '#!/bin/sh\n{{ if $h.exports }}export {{ join " " $h.exports }}\n{{ end }}exec %s hook --plugin %s{{ $h.prefixFlag }}{{ $h.bindingFlag | default "" }} "$@"\n' "$HOST_BINARY" {{ $h.file | quote }} > "$HOOKS_DIR/{{ $h.wrapper }}"
chmod 0755 "$HOOKS_DIR/{{ $h.wrapper }}"
{{- end }}
{{- end }}
echo "verify-plugins: ok"
{{- end -}}

{{/* oso.ha: "true" when the replicas elect an active one per plugin through Leases. */}}
{{- define "oso.ha" -}}
{{- if kindIs "bool" .Values.ha.enabled -}}
{{- .Values.ha.enabled -}}
{{- else -}}
{{- gt (int .Values.replicaCount) 1 -}}
{{- end -}}
{{- end -}}

{{/* oso.shardEnv: the shard's selector for the hooks, as OPENSTACK_SYNC_SHARD_* env entries. */}}
{{- define "oso.shardEnv" -}}
{{- with .Values.shard.labelSelector }}
- name: OPENSTACK_SYNC_SHARD_LABEL_SELECTOR
  value: {{ toJson . | quote }}
{{- end }}
{{- with .Values.shard.namespaces }}
{{- if not $.Values.rbac.clusterWide }}
{{- fail "shard.namespaces needs rbac.clusterWide: true (a namespaced release watches only its own namespace)" }}
{{- end }}
- name: OPENSTACK_SYNC_SHARD_NAMESPACES
  value: {{ join "," . | quote }}
{{- end }}
{{- end -}}
