#!/usr/bin/env bash
# A local image registry for the kind cluster (docs/kind.md, "Real image pulls"): distribution's
# registry built from its Go module at a pinned version, run as container homing-registry on the
# `kind` network, its blobs on the Docker volume homing-registry-data (kept across clusters and
# clones: a pushed test image is pushed once). The host pushes to 127.0.0.1:$REGISTRY_PORT (Docker
# allows plain HTTP to loopback); each node's containerd pulls homing-registry:5000 over plain
# HTTP through a hosts.toml in /etc/containerd/certs.d (the node image sets config_path there).
# Idempotent. Needs the cluster of kind-up.sh.
set -euo pipefail
[[ -n ${HOMING_NICED:-} ]] || exec env HOMING_NICED=1 nice -n 15 bash "$0" "$@"
e2e=$(cd "$(dirname "$0")/.." && pwd)
repo=$(cd "$e2e/.." && pwd)
source "$e2e/images/lib.sh"
export DOCKER_BUILDKIT=0
name=${KIND_CLUSTER:-homing}
bin=$e2e/.kind/bin
pkg=github.com/distribution/distribution/v3/cmd/registry@v3.0.0
port=${REGISTRY_PORT:-5001}
registry=homing-registry   # the container's name, which the nodes resolve on the kind network

bash "$e2e/images/build-base.sh"
mkdir -p "$bin"
if [[ ! -x $bin/registry || $(cat "$bin/.registry.pkg" 2>/dev/null) != "$pkg" ]]; then
  echo "building the registry" >&2
  GOBIN=$bin GOFLAGS=-mod=mod CGO_ENABLED=0 go install -trimpath "$pkg"
  echo "$pkg" >"$bin/.registry.pkg"
fi
hash=$( { content_hash e2e/kind/registry; sha256sum "$bin/registry"; docker image inspect -f '{{.Id}}' homing-local/debian:bookworm; } \
        | sha256sum | cut -c1-12)
image=homing-local/registry:$hash
if ! have_image "$image"; then
  tar -c -C "$e2e/kind/registry" Dockerfile config.yml -C "$bin" registry \
    | quiet_build --build-arg DEBIAN=homing-local/debian:bookworm -t "$image" -
fi

running=$(docker inspect -f '{{.Config.Image}} {{.State.Running}}' "$registry" 2>/dev/null || true)
if [[ $running != "$image true" ]]; then
  docker rm -f "$registry" >/dev/null 2>&1 || true
  docker network inspect kind >/dev/null 2>&1 || { echo "no kind network: run make kind-up first" >&2; exit 1; }
  docker run -d --name "$registry" --restart=unless-stopped --network kind \
    -p "127.0.0.1:$port:5000" -v homing-registry-data:/var/lib/registry "$image" >/dev/null
fi
for _ in $(seq 50); do
  curl -fsS "http://127.0.0.1:$port/v2/" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -fsS "http://127.0.0.1:$port/v2/" >/dev/null || { docker logs "$registry" | tail -20 >&2; exit 1; }

# Each node pulls $registry:5000 over plain HTTP (containerd reads hosts.toml on every pull).
for node in $("$bin/kind" get nodes --name "$name"); do
  docker exec -i "$node" sh -c "mkdir -p /etc/containerd/certs.d/$registry:5000 && cat >/etc/containerd/certs.d/$registry:5000/hosts.toml" <<HOSTS
server = "http://$registry:5000"

[host."http://$registry:5000"]
  capabilities = ["pull", "resolve"]
HOSTS
done
echo "registry $registry:5000 (from this host 127.0.0.1:$port) serves the kind cluster $name"
