# syntax=docker/dockerfile:1
# The Punctual operator image: `docker build -t punctual:0.1.0 .` from the repository root.
# The gate image of warm start: `docker build --target gate -t punctual-gate:0.1.0 .`.
#
# The operator's image is two stages (the last, so the default target). The builder installs the locked dependencies (uv.lock, exported with hashes, so
# exactly the tested versions) and the project's wheel into a virtualenv; the final stage is a
# fresh slim Python with that virtualenv copied in: no uv, no build tools, no compilers, no
# source tree. Every dependency ships a manylinux wheel for CPython 3.11, so nothing is compiled.
#
# PYTHON_IMAGE is any Debian bookworm with CPython 3.11 as `python3`: the public
# python:3.11-slim-bookworm (in /usr/local), or `make image`'s base made from Debian's own
# packages (in /usr, pip refused outside a virtualenv): so the builder installs only into
# virtualenvs, and calls python3 by name.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm
# GO_IMAGE: any Go at least hack/gate/go.mod's; only the gate's stages use it.
ARG GO_IMAGE=golang:1.25-bookworm

# The gate (hack/gate, docs/warm-start.md): a static binary (no libc: it runs in any image, as any
# user) alone in an empty image, at /gate. Warm Jobs' first init container copies it from here.
FROM ${GO_IMAGE} AS gate-builder
WORKDIR /src
COPY hack/gate/ ./
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /gate . \
    && chmod 0555 /gate

FROM scratch AS gate
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="punctual-gate" \
      org.opencontainers.image.description="Punctual's warm-start gate: holds a container until its slot, then runs it." \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=gate-builder /gate /gate
# Only for `docker run`: in a pod the operator's init containers set their own user.
USER 65532:65532
ENTRYPOINT ["/gate"]

FROM ${PYTHON_IMAGE} AS builder

# uv only exports the lock file and builds the wheel, from a virtualenv of its own; pip installs,
# so the operator's venv has no uv in it. PIP_CERT and SSL_CERT_FILE (pip's and uv's CA bundle)
# are for builds behind a TLS-inspecting proxy; unset, the defaults hold.
ARG UV_VERSION=0.13.9
ARG PIP_CERT
ARG SSL_CERT_FILE
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python3 -m venv /opt/build \
    && /opt/build/bin/pip install "uv==${UV_VERSION}"
ENV PATH=/opt/build/bin:$PATH

WORKDIR /src
# Dependencies first, in their own layer: it survives changes to the operator's code.
COPY pyproject.toml uv.lock ./
# The venv gets no pip or setuptools of its own (nothing to install with at run time): the
# builder's pip installs into it through --python. --require-hashes: exactly the locked files.
RUN uv export --quiet --frozen --no-dev --no-emit-project --format requirements-txt -o /tmp/requirements.txt \
    && python3 -m venv --without-pip /opt/punctual \
    && pip --python /opt/punctual/bin/python install --no-deps --require-hashes \
       -r /tmp/requirements.txt

# Then the project itself, as a wheel (not an editable install), without touching the deps.
COPY README.md ./
COPY operator/ ./operator/
RUN uv build --wheel --out-dir /tmp/dist \
    && pip --python /opt/punctual/bin/python install --no-deps /tmp/dist/*.whl

FROM ${PYTHON_IMAGE}

ARG VERSION=0.1.0
ARG SOURCE_URL=""
LABEL org.opencontainers.image.title="punctual" \
      org.opencontainers.image.description="A Kubernetes operator that runs scheduled jobs on time: exactly once per slot, explicit DST rules, no drift." \
      org.opencontainers.image.source="${SOURCE_URL}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"

# A numeric, non-root user (10001, matching the chart's runAsUser) with no login shell and no
# home worth writing to: the chart runs the container with a read-only root filesystem.
RUN groupadd --system --gid 10001 punctual \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin punctual

COPY --from=builder /opt/punctual /opt/punctual

ENV PATH=/opt/punctual/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1

USER 10001:10001
# /metrics and /healthz (kopf's liveness endpoint).
EXPOSE 8080 8081

ENTRYPOINT ["punctual"]
CMD ["run"]
