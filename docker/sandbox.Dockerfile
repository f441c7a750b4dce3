# The production sandbox image: SANDBOX_BACKEND=docker runs every job in a container of it.
#   docker build -f docker/sandbox.Dockerfile -t autocoder-sandbox:latest .
# The container is started read-only, without network, with all capabilities dropped and
# /workdir and /tmp as size-capped tmpfs mounts (see autocoder/sandbox/docker_backend.py).
# Keep the versions below equal to the project's venv (tests/sandbox/test_docker_backend.py).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    LANG=C.UTF-8

RUN pip install --no-cache-dir \
        pytest==9.2.0 \
        build==1.6.1 \
        setuptools==84.2.1 \
        wheel==0.48.0 \
    && useradd --uid 10001 --user-group --no-create-home --home-dir /tmp \
        --shell /usr/sbin/nologin sandbox \
    && mkdir /workdir && chown sandbox:sandbox /workdir

USER 10001:10001
WORKDIR /workdir
CMD ["python", "-c", "print('autocoder sandbox image: run jobs through the docker backend')"]
