#!/usr/bin/env bash
# Makes a Docker daemon answer on this machine: installs Debian's docker.io when the client
# or the daemon is missing, starts dockerd in the background when none answers. Idempotent.
set -euo pipefail
e2e=$(cd "$(dirname "$0")/.." && pwd)
run="$e2e/.run"
log="$run/dockerd.log"
wait_s=${DOCKER_WAIT_SECONDS:-60}

if docker info >/dev/null 2>&1; then exit 0; fi   # already up: nothing to do

if ! command -v docker >/dev/null || ! command -v dockerd >/dev/null; then
  [[ $(id -u) == 0 ]] || { echo "ensure-docker: docker.io is missing and installing it needs root" >&2; exit 1; }
  echo "ensure-docker: installing docker.io (Debian)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi

if ! pgrep -x dockerd >/dev/null; then
  mkdir -p "$run"
  echo "ensure-docker: starting dockerd (log: $log)" >&2
  # setsid: the daemon outlives this script and the make that ran it.
  setsid nohup dockerd >>"$log" 2>&1 </dev/null &
fi
for ((i = 0; i < wait_s; i++)); do
  docker info >/dev/null 2>&1 && exit 0
  sleep 1
done
echo "ensure-docker: dockerd did not answer within ${wait_s}s; last lines of $log:" >&2
tail -n 20 "$log" >&2 || true
exit 1
