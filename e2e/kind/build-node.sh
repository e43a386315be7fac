#!/usr/bin/env bash
# The kind node image: kind's own where a registry answers, else from local parts: a base from
# Debian's packages (node/Dockerfile), the
# Kubernetes programs of build-k8s.sh, and every image kubeadm starts preloaded into the
# node's containerd. `kind build node-image` cannot do this here: it pulls etcd, CoreDNS,
# pause and its CNI and storage images from registries. Reused while its inputs are the same.
# The images carry a local repository name (IMAGE_REPOSITORY): the repository names no
# registry's host, and kubeadm (imageRepository) and containerd (sandbox_image) ask for them
# under it. Writes e2e/.kind/node.env (NODE_IMAGE, NODE_SOURCE, IMAGE_REPOSITORY, ETCD_TAG) for kind-up.sh.
set -euo pipefail
# nice: the machine's cores are shared with benchmarks (the Go builds inherit it).
[[ -n ${HOMING_NICED:-} ]] || exec env HOMING_NICED=1 nice -n 15 bash "$0" "$@"
e2e=$(cd "$(dirname "$0")/.." && pwd)
repo=$(cd "$e2e/.." && pwd)
source "$e2e/images/lib.sh"
export DOCKER_BUILDKIT=0   # Debian's docker.io has no buildx
bin=$e2e/.kind/bin
debian=homing-local/debian:bookworm
r=homing.local/k8s   # kubeadm's imageRepository; node/files/etc/containerd/config.toml names its pause
grep -q "sandbox_image = \"$r/pause:3.10.1\"" "$e2e/kind/node/files/etc/containerd/config.toml" \
  || { echo "containerd's sandbox_image is not $r/pause:3.10.1" >&2; exit 1; }

# Where a registry answers (lib.sh, HOMING_IMAGES): kind's own default node image for the
# pinned kind, read from its module, as `kind create cluster` takes it (kind-up.sh then keeps
# kind's own CNI and image names).
bash "$e2e/kind/build-kind.sh"
defaults=$(go env GOMODCACHE)/$(cat "$bin/.kind.pkg")/pkg/apis/config/defaults/image.go
upstream=$(sed -n 's/^const Image = "\(.*\)"$/\1/p' "$defaults" 2>/dev/null || true)
if [[ -n $upstream ]] && pulled "$upstream"; then
  bash "$e2e/kind/build-k8s.sh" kubectl
  printf 'NODE_IMAGE=%s\nNODE_SOURCE=upstream\n' "$upstream" >"$e2e/.kind/node.env"
  echo "$upstream: kind's own node image" >&2; echo "$upstream"; exit 0
fi

bash "$e2e/images/build-base.sh"
bash "$e2e/kind/build-k8s.sh"
# etcd at the version the project's tests run (e2e/controlplane's pin), built alone into
# e2e/.kind/bin: the kind cluster needs none of the other programs of e2e/.bin.
here=$e2e; source "$e2e/gobuild.sh"
gobuild etcd controlplane go.etcd.io/etcd/server/v3
version=$(cat "$bin/.version")
etcd_tag=$("$bin/etcd" --version | awk '/^etcd Version/ {print $3}')-0
coredns_tag=v$("$bin/coredns" -version | sed -n 's/^CoreDNS-//p')

# The node image's tag hashes everything it is made of.
hash=$( { content_hash e2e/kind/node e2e/kind/images.Dockerfile e2e/kind/build-node.sh
          (cd "$bin" && sha256sum kubelet kubeadm kubectl kube-apiserver kube-controller-manager \
             kube-scheduler kube-proxy etcd coredns pause crictl)
          docker image inspect -f '{{.Id}}' $debian; } | sha256sum | cut -c1-12)
node=homing-local/kind-node:$version-$hash
write_env() { printf 'NODE_IMAGE=%s\nNODE_SOURCE=local\nIMAGE_REPOSITORY=%s\nETCD_TAG=%s\n' "$node" "$r" "$etcd_tag" >"$e2e/.kind/node.env"; }
if have_image "$node"; then echo "$node: present" >&2; write_env; echo "$node"; exit 0; fi

# image NAME STAGE BIN: one program on the Debian base (images.Dockerfile), the build context
# just that program.
image() {
  tar -c -C "$e2e/kind" images.Dockerfile -C "$bin" "$3" \
    | nice -n 15 docker build -q -f images.Dockerfile --target "$2" --build-arg DEBIAN=$debian \
        --build-arg BIN="$3" -t "$1" - >/dev/null
}
# kubeadm's names under a repository of its own choosing: <repo>/coredns (not coredns/coredns).
images=("$r/kube-apiserver:$version" "$r/kube-controller-manager:$version"
        "$r/kube-scheduler:$version" "$r/kube-proxy:$version" "$r/etcd:$etcd_tag"
        "$r/coredns:$coredns_tag" "$r/pause:3.10.1")
for name in kube-apiserver kube-controller-manager kube-scheduler etcd; do
  image "$r/$name:${version}" program $name
done
docker tag "$r/etcd:$version" "$r/etcd:$etcd_tag" && docker rmi -f "$r/etcd:$version" >/dev/null
image "$r/kube-proxy:$version" kube-proxy kube-proxy
image "$r/coredns:$coredns_tag" coredns coredns
# The pod sandbox: one static file, imported as it is.
tar -c -C "$bin" pause | docker import -c 'ENTRYPOINT ["/pause"]' - "$r/pause:3.10.1" >/dev/null

base=homing-local/kind-base:$hash
tar -c -C "$e2e/kind/node" Dockerfile files -C "$bin" crictl \
  | nice -n 15 docker build -q --build-arg DEBIAN=$debian -t "$base" - >/dev/null

# As kind does: a container of the base, the programs copied in, the images imported into
# its containerd, committed. (ctr 1.6 cannot pin them; kind turns image GC off.)
cid=$(docker run -d --init --privileged --entrypoint sleep "$base" infinity)   # --init reaps containerd
trap 'docker rm -f "$cid" >/dev/null' EXIT
for p in kubelet kubeadm kubectl; do docker cp "$bin/$p" "$cid:/usr/bin/$p"; done
docker exec "$cid" sh -c "echo $version >/kind/version"
docker exec "$cid" sh -c 'containerd >/var/log/containerd-build.log 2>&1 & 
  for i in $(seq 30); do ctr version >/dev/null 2>&1 && break; sleep 1; done'
docker save "${images[@]}" | docker exec -i "$cid" ctr --namespace=k8s.io images import \
  --all-platforms --no-unpack --digests - >/dev/null
docker exec "$cid" sh -c 'pkill containerd; while pgrep containerd >/dev/null; do sleep 0.2; done
  rm -f /var/log/containerd-build.log'
docker commit -c 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' "$cid" "$node" >/dev/null
write_env
echo "$node: built" >&2
echo "$node"
