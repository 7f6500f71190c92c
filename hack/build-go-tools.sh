#!/usr/bin/env bash
# Builds the Go programs that hack/programs.tsv lists with a `go:PACKAGE@VERSION` source (the
# tools the tests run on the chart's output: promtool, kubeconform; controller-gen, which makes
# the Prometheus Operator's CRDs) into a cache outside the clone, each once per version, build
# tags and link flags, and prints the path of each program asked for (all of them without
# arguments), one a line, in the order asked.
# Apart from the control plane (hack/build-control-plane.sh) because they do not follow the
# Kubernetes version: bumping one rebuilds that one alone. A lock per program keeps two runs
# from racing.
set -euo pipefail
hack=$(cd "$(dirname "$0")" && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/punctual/tools
export CGO_ENABLED=0 GOFLAGS=-mod=mod

# The release flags each project's own build sets, so the programs report the version they are.
link_flags() {  # link_flags NAME VERSION
  local name=$1 version=$2
  case $name in
    # Prometheus's Go module versions v0.3MM.P are its releases v3.MM.P.
    promtool)
      local release=${version#v0.3}; release="3.$((10#${release%%.*})).${release#*.}"
      printf -- '-X github.com/prometheus/common/version.Version=%s' "$release"
      printf -- ' -X github.com/prometheus/common/version.Branch=HEAD' ;;
    kubeconform) printf -- '-X main.version=%s' "$version" ;;
  esac
}

# Build tags that leave out what the tests never run, to shorten a cold build. Prometheus's
# `remove_all_sd` drops the service discoveries its plugins/ package registers (every cloud's
# SDK); `check rules`, `test rules` and `check metrics` use none of them.
build_tags() {  # build_tags NAME
  case $1 in
    promtool) printf 'remove_all_sd' ;;
  esac
}

declare -A package_of
order=()
while IFS=$'\t' read -r program source _; do
  [[ -z $program || $program == \#* || $source != go:* ]] && continue
  package_of[$program]=${source#go:}
  order+=("$program")
done < "$hack/programs.tsv"
(( $# )) && order=("$@")

for name in "${order[@]}"; do
  package=${package_of[$name]:?"$name: hack/programs.tsv lists no go: source for it"}
  version=${package##*@}
  flags=$(link_flags "$name" "$version")
  tags=$(build_tags "$name")
  stamp=$(printf '%s\n%s\n%s\n' "$package" "$flags" "$tags" | sha256sum | cut -c1-12)
  folder="$cache/$name/$version-$stamp"
  if [[ ! -x $folder/$name ]]; then
    mkdir -p "$folder"
    exec 9>"$folder/.lock"
    flock 9
    if [[ ! -x $folder/$name ]]; then
      started=$(date +%s)
      printf '[go-tools] building %s (%s) ...\n' "$name" "$package" >&2
      GOBIN="$folder/.partial" go install -trimpath -tags "$tags" -ldflags "-s -w $flags" "$package"
      mv "$folder/.partial/$name" "$folder/$name"
      rmdir "$folder/.partial"
      printf '[go-tools] built %s in %ds\n' "$name" "$(( $(date +%s) - started ))" >&2
    fi
    exec 9>&-
  fi
  echo "$folder/$name"
done
