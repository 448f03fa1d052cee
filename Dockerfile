# Front-end libraries from npm, then a slim Python runtime.
FROM node:20-slim AS static
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 BENCHWEB_VAR_DIR=/var/lib/benchweb
WORKDIR /app
# The runtime set only: test and lint tools (requirements-dev.txt) stay out of the image.
COPY requirements.txt ./
RUN pip install -r requirements.txt
COPY . .
COPY --from=static /src/node_modules ./node_modules
RUN useradd --create-home --uid 1000 benchweb && mkdir -p /var/lib/benchweb && chown benchweb /var/lib/benchweb
USER benchweb
RUN DJANGO_SECRET_KEY=build BENCHWEB_FIELD_KEYS=$(python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())") \
    python manage.py collectstatic --noinput -v0
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"
# Threads, as ./bw run: a sync worker is killed after 30 s in one request, and a CSV export of 100,000 runs
# streams for longer (README, "Exports and the printable report").
CMD ["gunicorn", "benchweb.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--threads", "4", "--preload"]
