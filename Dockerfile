# syntax=docker/dockerfile:1
# The Punctual operator image: `docker build -t punctual:0.1.0 .` from the repository root.
#
# Two stages. The builder installs the locked dependencies (uv.lock, exported with hashes, so
# exactly the tested versions) and the project's wheel into a virtualenv; the final stage is a
# fresh slim Python with that virtualenv copied in: no uv, no build tools, no compilers, no
# source tree. Every dependency ships a manylinux wheel for CPython 3.11, so nothing is compiled.
#
# PYTHON_IMAGE is any Debian bookworm with CPython 3.11 as `python3`: the public
# python:3.11-slim-bookworm (in /usr/local), or `make image`'s base made from Debian's own
# packages (in /usr, pip refused outside a virtualenv): so the builder installs only into
# virtualenvs, and calls python3 by name.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

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
