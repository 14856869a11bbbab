# The baton image: one install, several commands (`baton worker`, `baton orders import`, ...).
# Used by docker-compose.yml; build with `docker compose build` or `docker build -t baton .`.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
# Dependencies first, at the versions in constraints.txt: this layer is rebuilt only when
# pyproject.toml or constraints.txt change, not on a source edit. The postgres extra brings
# psycopg (binary wheel, no libpq or compiler needed), rocksdb the on-disk table store
# (BATON_STORE=rocksdb), otel an OpenTelemetry SDK; the embedded broker is not needed.
COPY pyproject.toml constraints.txt ./
RUN python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
extras = p['optional-dependencies']; \
print('\n'.join(p['dependencies'] + extras['postgres'] + extras['rocksdb'] + extras['otel']))" \
 > /tmp/deps.txt \
 && pip install -c constraints.txt -r /tmp/deps.txt
# .dockerignore keeps .git, virtualenvs, local state and tests out of the build context.
COPY . .
RUN pip install --no-deps ".[postgres,rocksdb,otel]" \
 && useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin baton \
 && mkdir -p /data \
 && chown baton:baton /data

# Run unprivileged. /data is owned by baton, so a named volume mounted there on first use
# inherits that ownership and stays writable.
USER baton
WORKDIR /data
ENV BATON_DATA_DIR=/data

# Web/metrics endpoint (BATON_WEB_PORT).
EXPOSE 6066

ENTRYPOINT ["baton"]
CMD ["worker"]
