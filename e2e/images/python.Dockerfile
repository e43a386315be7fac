# A Python base for the homing image, from the local Debian base: bookworm's python3 is 3.11,
# the version requirements.lock was compiled for (cp311 wheels). The Dockerfile runs `python`.
ARG DEBIAN=homing-local/debian:bookworm
FROM ${DEBIAN}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y python3 python3-venv \
 && ln -s python3 /usr/bin/python \
 && rm -rf /var/lib/apt/lists/*
