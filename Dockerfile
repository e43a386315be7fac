# homing: the operator and its admission webhook, `python -m homing run` (the image's command;
# other arguments run the `homing` CLI instead, e.g. `docker run IMAGE --help`).
#
#   make lock                                   # after changing dependencies: requirements.lock
#   docker build --build-arg BASE_DIGEST=sha256:<digest> -t homing:0.1.0 .
#   make release VERSION=0.1.0                  # linux/amd64 and linux/arm64 images, SBOMs, chart... in dist/
#
# VERSION below is the release, pyproject.toml's version (tests/adapters/test_release.py keeps
# the two, the chart and the manifests' image tag equal); it goes into the image's labels.
#
# The base is an exact Python release; at release time pin it by digest too (the digest
# of the tag below, as your registry reports it: `docker buildx imagetools inspect
# python:3.11.14-slim-trixie`), passed as BASE_DIGEST, so that the image is rebuilt from
# the very same bytes. No digest is written here: none could be checked where this file
# was written. Every Python dependency is installed from requirements.lock with
# --require-hashes: a changed or substituted file fails the build.
# manifests/base/deployment.yaml runs it as UID 10001 with a read-only root filesystem
# (only /tmp is writable: an emptyDir for the webhook's certificates).
ARG VERSION=0.1.0
ARG PYTHON_VERSION=3.11.14
ARG BASE_VARIANT=slim-trixie
ARG BASE_DIGEST=
ARG BASE=python:${PYTHON_VERSION}-${BASE_VARIANT}${BASE_DIGEST:+@${BASE_DIGEST}}

# -- build: a virtual environment with the locked dependencies and homing ---------------
FROM ${BASE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/homing
WORKDIR /src
COPY requirements.lock ./
RUN /opt/homing/bin/pip install --require-hashes --no-deps -r requirements.lock
# README.md* : the readme is optional for the build (the glob may match nothing).
COPY pyproject.toml LICENSE README.md* ./
COPY operator/homing ./operator/homing
# setuptools comes from the lock: no unpinned build dependency is fetched.
RUN /opt/homing/bin/pip install --no-deps --no-build-isolation --no-index . \
 && /opt/homing/bin/pip uninstall -y setuptools

# -- run: the same base, the environment, an unprivileged user --------------------------
FROM ${BASE}
ARG VERSION
# OCI annotations as labels; `make release` adds revision, created, base.name and, where the build
# is told where the source is, source (docs/dev/release.md).
LABEL org.opencontainers.image.title="homing" \
      org.opencontainers.image.description="Sends rescheduled NPU/GPU pods back to the nodes that already hold their images." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PATH=/opt/homing/bin:$PATH
COPY --from=build /opt/homing /opt/homing
RUN groupadd --gid 10001 homing \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin homing
WORKDIR /
# Numeric, so that Kubernetes can check runAsNonRoot.
USER 10001:10001
# webhook (TLS), metrics, health (/healthz, /readyz)
EXPOSE 9443 8080 8081
# `homing run` starts the operator; any other arguments replace `run` (`--help`, `version`).
ENTRYPOINT ["python", "-m", "homing"]
CMD ["run"]
