# The portal image (web and worker services of compose.yaml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
    AUTOCODER_VAR_DIR=/app/var
WORKDIR /app

RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 1000 autocoder

# CPU build of torch first, so sentence-transformers does not pull a CUDA build.
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
COPY pyproject.toml README.md ./
COPY config ./config
COPY autocoder ./autocoder
COPY teams ./teams
COPY projects ./projects
COPY marketplace ./marketplace
RUN pip install --no-cache-dir .
# The plugin runtime: the interpreter plugin code runs on in the sandbox, apart from the
# portal's packages (autocoder/runtime/requirements.txt, the same as `make run` builds).
ENV PLUGIN_RUNTIME_DIR=/opt/plugin-runtime
RUN python -m autocoder.runtime.build --dir /opt/plugin-runtime
COPY . .
RUN mkdir -p /app/var && chown -R autocoder /app/var
USER autocoder
EXPOSE 8000
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "config.asgi:application"]
