# homing: the operator and its admission webhook, `python -m homing`.
#   docker build -t homing:0.1.0 .
# manifests/deployment.yaml runs it as UID 10001 with a read-only root filesystem
# (only /tmp is writable: an emptyDir for the webhook's certificate).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
# README.md* : the readme is optional for the build (the glob may match nothing).
COPY pyproject.toml README.md* ./
COPY operator/homing ./operator/homing
RUN pip install . \
 && rm -rf /src \
 && groupadd --gid 10001 homing \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin homing

WORKDIR /
# Numeric, so that Kubernetes can check runAsNonRoot.
USER 10001:10001
# webhook (TLS), metrics, kopf liveness (/healthz)
EXPOSE 9443 8080 8081
ENTRYPOINT ["python", "-m", "homing"]
