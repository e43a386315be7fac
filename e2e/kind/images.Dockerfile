# The images kubeadm starts (control plane, kube-proxy, etcd, CoreDNS), each one program
# from e2e/.kind/bin on the local Debian base: build-node.sh picks it with --build-arg BIN.
# (The classic builder builds every stage before the target: kube-proxy, the costly one, is last.)
ARG DEBIAN=homing-local/debian:bookworm
FROM ${DEBIAN} AS program
ARG BIN
COPY ${BIN} /usr/local/bin/${BIN}

# kubeadm's CoreDNS Deployment passes only arguments: the image's entrypoint is the server.
FROM program AS coredns
ENTRYPOINT ["/usr/local/bin/coredns"]

# kube-proxy programs the node's iptables; the Debian base has no iptables.
FROM program AS kube-proxy
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y iptables nftables conntrack ipset kmod \
 && rm -rf /var/lib/apt/lists/*
