# The production sandbox image: SANDBOX_BACKEND=docker runs every job in a container of it.
# Without access to an image registry, `make sandbox-image` builds the same from Debian
# packages (autocoder/sandbox/image.py). With one:
#   docker build -f docker/sandbox.Dockerfile -t autocoder-sandbox:latest \
#     --build-arg RUNTIME_LOCK=$(sha256sum autocoder/runtime/requirements.txt | cut -d' ' -f1) .
# (the label lets `doctor` check that the image holds the current runtime lock)
# The container is started read-only, without network, with all capabilities dropped and
# /workdir and /tmp as size-capped tmpfs mounts (see autocoder/sandbox/docker_backend.py).
# The image's Python is the plugin runtime: exactly autocoder/runtime/requirements.txt, the
# same environment `make run` builds in .plugin-runtime, and none of the portal's packages.
FROM python:3.11-slim
ARG RUNTIME_LOCK=unknown
LABEL org.autocoder.runtime-lock=$RUNTIME_LOCK

ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    LANG=C.UTF-8

COPY autocoder/runtime/requirements.txt /tmp/plugin-runtime.txt
RUN pip install --no-cache-dir --no-deps -r /tmp/plugin-runtime.txt \
    && rm /tmp/plugin-runtime.txt \
    && useradd --uid 10001 --user-group --no-create-home --home-dir /tmp \
        --shell /usr/sbin/nologin sandbox \
    && mkdir /workdir && chown sandbox:sandbox /workdir

USER 10001:10001
WORKDIR /workdir
CMD ["python", "-c", "print('autocoder sandbox image: run jobs through the docker backend')"]
