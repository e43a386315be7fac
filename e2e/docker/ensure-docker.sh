#!/usr/bin/env bash
# Makes a Docker daemon answer on this machine: installs Debian's docker.io when the client
# or the daemon is missing, starts dockerd in the background when none answers. Idempotent.
set -euo pipefail
e2e=$(cd "$(dirname "$0")/.." && pwd)
run="$e2e/.run"
log="$run/dockerd.log"
pidfile="$run/dockerd.pid"
wait_s=${DOCKER_WAIT_SECONDS:-60}
capfit=/usr/local/lib/homing/runc-capfit

apt_install() {
  [[ $(id -u) == 0 ]] || { echo "ensure-docker: $* missing; installing needs root" >&2; exit 1; }
  echo "ensure-docker: installing $* (Debian)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# A host whose capability bounding set is not full cannot run --privileged containers (kind's
# nodes) with plain runc: dockerd then runs them through runc-capfit (see that file).
args=()
if [[ $(awk '/^CapBnd:/ {print $2}' /proc/self/status) != 000001ffffffffff ]]; then
  command -v jq >/dev/null || apt_install jq
  mkdir -p "$(dirname "$capfit")"
  cmp -s "$e2e/docker/runc-capfit" "$capfit" || install -m 0755 "$e2e/docker/runc-capfit" "$capfit"
  args=(--add-runtime "capfit=$capfit" --default-runtime capfit)
fi

if docker info >/dev/null 2>&1; then
  want=${args:+capfit}
  have=$(docker info -f '{{.DefaultRuntime}}')
  [[ -z $want || $have == "$want" ]] && exit 0
  # A daemon without the runtime: restart it only if this script started it.
  if [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    echo "ensure-docker: restarting dockerd with runtime $want" >&2
    kill "$(cat "$pidfile")"
    while kill -0 "$(cat "$pidfile")" 2>/dev/null; do sleep 0.5; done
  else
    echo "ensure-docker: dockerd runs without runtime $want (privileged containers fail here);" \
         "restart it with: dockerd ${args[*]}" >&2
    exit 1
  fi
fi

if ! command -v docker >/dev/null || ! command -v dockerd >/dev/null; then apt_install docker.io; fi

if ! pgrep -x dockerd >/dev/null; then
  mkdir -p "$run"
  echo "ensure-docker: starting dockerd (log: $log)" >&2
  # setsid: the daemon outlives this script and the make that ran it.
  setsid nohup dockerd "${args[@]}" >>"$log" 2>&1 </dev/null &
  echo $! >"$pidfile"
fi
for ((i = 0; i < wait_s; i++)); do
  docker info >/dev/null 2>&1 && exit 0
  sleep 1
done
echo "ensure-docker: dockerd did not answer within ${wait_s}s; last lines of $log:" >&2
tail -n 20 "$log" >&2 || true
exit 1
