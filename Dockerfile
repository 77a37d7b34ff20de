# The app image: Python 3.12, dependencies from uv.lock. One image for every service of
# docker-compose.yml: web (uvicorn), worker (celery) and the one-shot migrate/ingest.
FROM python:3.12-slim

ENV PYTHONUNBUFFERED=1 \
    UV_PROJECT_ENVIRONMENT=/opt/venv \
    UV_COMPILE_BYTECODE=1 \
    PATH="/opt/venv/bin:$PATH"
RUN pip install --no-cache-dir uv

WORKDIR /app
COPY pyproject.toml uv.lock .python-version ./
RUN uv sync --frozen --no-dev --no-install-project
# .dockerignore keeps local state out: .data (the generated secret key, the embedded database with
# its users and runs), .venv, .git, caches and test artifacts.
COPY . .
# Never a debug page in the image (it shows settings to whoever makes a request fail); set here
# rather than relying on the settings' default, so the image says what it runs with.
ENV DJANGO_DEBUG=false
# Static files are collected into the image and served by WhiteNoise from every web process.
ENV DJANGO_STATIC_ROOT=/app/staticfiles
RUN DJANGO_SECRET_KEY=build-only python manage.py collectstatic --noinput -v 0

# PostgreSQL refuses to run as root, and nothing here needs root at run time.
RUN useradd --create-home app && mkdir -p /app/.data && chown -R app /app/.data
USER app

EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --retries=5 \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz')"
CMD ["python", "manage.py", "serve", "--host", "0.0.0.0", "--port", "8000"]
