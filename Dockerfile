# netsched's image: `docker build -t netsched:0.1.0 .` at the repository root.
# The package is installed with pip: netsched, with the plugins/ folder as netsched.plugins (setup.py
# maps it there). The process runs as an unprivileged user and needs nothing writable but /tmp
# (see deploy/deployment.yaml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
# constraints.txt pins every runtime dependency (uv pip compile, see its header): a rebuild
# installs exactly the versions CI tested, never whatever is newest that day.
COPY pyproject.toml setup.py README.md constraints.txt ./
COPY netsched/ netsched/
COPY plugins/ plugins/
RUN pip install -c constraints.txt . \
    && rm -rf /src \
    && groupadd --gid 65532 netsched \
    && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin netsched

WORKDIR /
# Numeric, so the kubelet can verify runAsNonRoot without reading /etc/passwd.
USER 65532:65532
# /metrics, /healthz, /livez, /readyz and /debug/* over HTTPS (--secure-port, delegated auth).
EXPOSE 10259
ENTRYPOINT ["netsched"]
