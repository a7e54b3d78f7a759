# Kernel Court images. Build the web/CPU-worker image with `docker build --target web .`
# and a GPU worker image with `docker build --target gpu-worker .` (run it with --gpus).
# Workers confine user code with bubblewrap, which needs user namespaces inside the container:
# run them with seccomp and AppArmor profiles that allow unshare (deploy/README.md).

FROM python:3.11-slim AS web
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 COURT_VAR_DIR=/var/lib/court
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential bubblewrap \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 1000 court \
 && mkdir -p /var/lib/court && chown court /var/lib/court
WORKDIR /app
COPY requirements.txt .
# The CPU build of torch: the web process and CPU workers need no CUDA.
RUN pip install --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt
COPY --chown=court . .
# A throwaway key: nothing secret may be baked into the image.
RUN SECRET_KEY=collectstatic-only COURT_VAR_DIR=/tmp/build-var python manage.py collectstatic --noinput --verbosity 0
USER court
EXPOSE 8000
CMD ["daphne", "--bind", "0.0.0.0", "--port", "8000", "config.asgi:application"]

# GPU workers build load_inline extensions, so they need nvcc: a CUDA devel base.
FROM nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04 AS gpu-worker
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 COURT_VAR_DIR=/var/lib/court \
    COURT_MODE=production COURT_ROLE=worker
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv python3-dev build-essential ninja-build bubblewrap \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv /opt/venv \
 && (useradd --create-home --uid 1000 court || true) \
 && mkdir -p /var/lib/court && chown 1000 /var/lib/court
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /app
COPY requirements.txt .
# torch from PyPI is the CUDA build; triton comes with it.
RUN pip install -r requirements.txt
COPY --chown=1000 . .
USER 1000
CMD ["python", "manage.py", "verification_worker"]
