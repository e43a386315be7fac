#!/usr/bin/env bash
# Builds the LeaderWorkerSet and JobSet controller managers (pinned in e2e/frameworks/*/go.mod,
# one module each: they pin different k8s.io versions) into the git-ignored cache (e2e/.bin),
# each only when its go.mod or go.sum changed. Their CRDs and webhook configurations are
# read at run time from the module cache (e2e/homing_e2e/frameworks.py), never copied.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin="${HOMING_BIN_DIR:-$here/.bin}"
mkdir -p "$bin"
source "$here/gobuild.sh"

gobuild lws-controller-manager frameworks/lws sigs.k8s.io/lws/cmd
gobuild jobset-controller-manager frameworks/jobset sigs.k8s.io/jobset
