#!/usr/bin/env bash
# A kind cluster from local parts (cluster.yaml): the node image of build-node.sh, pod
# networking wired by hand (routes between the nodes' pod CIDRs, as kindnetd would), then a
# check that the four nodes are Ready and that the homing image runs in a pod.
# Idempotent: an existing cluster is kept if its API server answers, else made anew. Kubeconfig: e2e/.kind/kubeconfig.
set -euo pipefail
e2e=$(cd "$(dirname "$0")/.." && pwd)
name=${KIND_CLUSTER:-homing}
export KUBECONFIG=$e2e/.kind/kubeconfig
kind=$e2e/.kind/bin/kind
kubectl=$e2e/.kind/bin/kubectl

bash "$e2e/kind/build-kind.sh"
bash "$e2e/kind/build-node.sh" >/dev/null
source "$e2e/.kind/node.env"

local_node() { [[ ${NODE_SOURCE:-local} == local ]]; }   # else kind's own node image, with its CNI

# A kept cluster is reused only if its API server answers. A machine restart (or a stage killed
# halfway) leaves kind's containers behind with an API server that resets every connection, and
# kind still lists the cluster: reusing it failed every later step. Such a cluster is deleted and
# made anew. KIND_REUSE_WAIT: how long a kept cluster may take to answer (one that was just
# restarted needs a while).
if "$kind" get clusters 2>/dev/null | grep -qx "$name"; then
  "$kind" export kubeconfig --name "$name" --kubeconfig "$KUBECONFIG" >/dev/null 2>&1 || true
  deadline=$((SECONDS + ${KIND_REUSE_WAIT:-60}))
  until "$kubectl" get --raw /readyz --request-timeout=5s >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      echo "kind cluster $name exists but its API server does not answer: deleted, made anew" >&2
      "$kind" delete cluster --name "$name" --kubeconfig "$KUBECONFIG"
      break
    fi
    sleep 2
  done
fi
if ! "$kind" get clusters 2>/dev/null | grep -qx "$name"; then
  if local_node; then
    # kubeadm asks for every image under the node image's local repository name (CoreDNS's and
    # etcd's too: they follow imageRepository unless set apart). kubeadm 1.35 expects etcd
    # 3.6.6; the project's tests pin (and we built) another.
    config=$(cat "$e2e/kind/cluster.yaml"; printf '  - |\n    kind: ClusterConfiguration\n    imageRepository: "%s"\n    etcd:\n      local:\n        imageTag: "%s"\n' "$IMAGE_REPOSITORY" "$ETCD_TAG")
  else
    config=$(grep -v '^  disableDefaultCNI: true' "$e2e/kind/cluster.yaml")
  fi
  "$kind" create cluster --name "$name" --image "$NODE_IMAGE" --config <(echo "$config")
else
  echo "kind cluster $name exists: reused" >&2
fi
# Written either way: a cluster kept from another checkout (or a deleted file) leaves none here,
# and kubectl without one talks to localhost:8080.
"$kind" export kubeconfig --name "$name" --kubeconfig "$KUBECONFIG" >/dev/null

# Pod networking: each node's pod CIDR on ptp veths (CNI config), the other nodes' CIDRs routed
# via their addresses, traffic leaving the cluster masqueraded.
cluster_cidr=10.244.0.0/16
# Only kind's own nodes (its containers): the e2e suite run against this cluster (make kind-e2e)
# leaves fake Node objects behind that have no container to wire.
mapfile -t kind_nodes < <("$kind" get nodes --name "$name")
mapfile -t nodes < <("$kubectl" get nodes "${kind_nodes[@]}" -o jsonpath='{range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}')
if local_node; then
  for me in "${nodes[@]}"; do
    read -r node cidr _ <<<"$me"
    docker exec -i "$node" sh -c 'cat >/etc/cni/net.d/10-homing.conflist' <<CNI
{"cniVersion": "0.4.0", "name": "homing", "plugins": [
  {"type": "ptp", "mtu": 1500,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$cidr"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
CNI
    for other in "${nodes[@]}"; do
      read -r onode ocidr oip <<<"$other"
      [[ $onode == "$node" ]] || docker exec "$node" ip route replace "$ocidr" via "$oip"
    done
    docker exec "$node" sh -c "iptables -t nat -C POSTROUTING -s $cluster_cidr ! -d $cluster_cidr -j MASQUERADE 2>/dev/null \
      || iptables -t nat -A POSTROUTING -s $cluster_cidr ! -d $cluster_cidr -j MASQUERADE"
  done
fi

"$kubectl" wait --for=condition=Ready "${kind_nodes[@]/#/node/}" --timeout=180s
# The smoke pod resolves kubernetes.default once and exits: Ready nodes do not mean CoreDNS
# answers yet (a make test run lost its kind stage to that race: name resolution failed
# 0 s after the nodes were Ready).
"$kubectl" -n kube-system rollout status deployment/coredns --timeout=180s >/dev/null

# The homing image in a pod (built by make images).
"$kind" load docker-image homing:local --name "$name" >/dev/null
"$kubectl" delete pod homing-smoke --ignore-not-found >/dev/null
"$kubectl" apply -f "$e2e/kind/smoke-pod.yaml" >/dev/null
"$kubectl" wait --for=jsonpath='{.status.phase}'=Succeeded pod/homing-smoke --timeout=120s >/dev/null \
  || { "$kubectl" describe pod homing-smoke; "$kubectl" logs homing-smoke; exit 1; }
"$kubectl" logs homing-smoke
echo "kind cluster $name is up: export KUBECONFIG=$KUBECONFIG"
