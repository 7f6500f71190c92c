#!/usr/bin/env bash
# Builds the local control plane from Go modules into a cache outside the clone, once per version:
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, helm, kwok, and for the
#   real node (python -m localcluster up --real-node) kubelet, kube-proxy and CoreDNS.
# Prints the bin folder on its last line. Reused when present; a lock keeps two runs from racing.
# Outside the clone because CI runs in a fresh clone on the same machine: Go's module and build
# caches and this folder survive between runs, a folder inside the repository would not.
set -euo pipefail
hack=$(cd "$(dirname "$0")" && pwd)
k8s_version=$(cat "$hack/k8s/VERSION")
etcd_version=$(cat "$hack/etcd/VERSION")
helm_version=v3.22.0
kwok_version=v0.8.0
# The stamp names every pinned input, so a version bump builds into a new folder.
stamp=$(cat "$hack/k8s/go.mod" "$hack/etcd/go.mod" "$hack/coredns/go.mod" "$hack/coredns/main.go" "$0" | sha256sum | cut -c1-12)
bin=${PUNCTUAL_K8S_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/punctual/k8s/${k8s_version}-${stamp}/bin}
mkdir -p "$bin"
export CGO_ENABLED=0 GOFLAGS=-mod=mod

exec 9>"$bin/.lock"
flock 9

started=$(date +%s)
step() { printf '[control-plane %4ds] %s\n' "$(( $(date +%s) - started ))" "$*" >&2; }

build() {  # build NAME DIR PACKAGE [LDFLAGS]
  local name=$1 dir=$2 package=$3 ldflags=${4:-}
  if [[ -x "$bin/$name" ]]; then return; fi
  step "building $name ($package) ..."
  (cd "$dir" && go build -trimpath -ldflags "-s -w $ldflags" -o "$bin/$name.partial" "$package")
  mv "$bin/$name.partial" "$bin/$name"
  step "built $name"
}

# Version ldflags so the servers and kubectl report the release they were built from.
major=${k8s_version#v}; major=${major%%.*}
minor=${k8s_version#v*.}; minor=${minor%%.*}
commit=$(go mod download -json "k8s.io/kubernetes@${k8s_version}" | sed -n 's/.*"Sum": "\(.*\)".*/\1/p')
k8s_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ldflags+=" -X $pkg.gitVersion=${k8s_version} -X $pkg.gitMajor=${major} -X $pkg.gitMinor=${minor}"
  k8s_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z -X '$pkg.gitCommit=${commit}'"
done

build etcd "$hack/etcd" . 
for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy; do
  build "$cmd" "$hack/k8s" "k8s.io/kubernetes/cmd/$cmd" "$k8s_ldflags"
done
# The real node's DNS: CoreDNS with only the plugins it uses (hack/coredns/main.go).
build coredns "$hack/coredns" .
# Helm's release flags (its Makefile's): the version it reports, and the Kubernetes version it
# assumes where it asks no cluster (`helm template`, `helm lint`), which official binaries take
# from the client-go they are built with; without them it assumes 1.20, below the chart's
# kubeVersion.
helm_gomod=$(go mod download -json "helm.sh/helm/v3@${helm_version}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
client_go=$(awk '$1 == "k8s.io/client-go" { print $2 }' "$helm_gomod")  # v0.<minor>.<patch>
helm_k8s_minor=${client_go#v0.}; helm_k8s_minor=${helm_k8s_minor%%.*}
helm_ldflags="-X helm.sh/helm/v3/internal/version.version=${helm_version}"
helm_ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  helm_ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=${helm_k8s_minor}"
done
# helm and kwok carry no replace directives: `go install` of a pinned version is reproducible
# (the checksum database pins the content).
for tool in "helm helm.sh/helm/v3/cmd/helm@${helm_version} ${helm_ldflags}" "kwok sigs.k8s.io/kwok/cmd/kwok@${kwok_version}"; do
  read -r name module ldflags <<<"$tool"
  if [[ ! -x "$bin/$name" ]]; then
    step "building $name ($module) ..."
    GOBIN="$bin" go install -trimpath -ldflags "-s -w ${ldflags:-}" "$module"
    step "built $name"
  fi
done
step "control plane ready in $bin"
echo "$bin"
