# triagebot's daemon: the same install steps as the README's first command.
#   docker build -t triagebot .
#   docker run -d --name triagebot -v triage-data:/data -v $PWD/rules:/rules:ro triagebot
#   docker run -d --name triagebot -v triage-data:/data -v $PWD/rules:/rules:ro \
#       -e SLACK_BOT_TOKEN -p 127.0.0.1:9464:9464 triagebot
# On PostgreSQL the daemon defers lab runs as jobs and workers run them (docs/postgresql.md, "Running on
# PostgreSQL"); the same image runs both, each given the database URL:
#   docker run -d --name triagebot -e TRIAGE_DB=postgresql://… -v $PWD/rules:/rules:ro triagebot
#   docker run -d --name triage-worker --no-healthcheck -e TRIAGE_DB=postgresql://… -v $PWD/rules:/rules:ro \
#       triagebot worker --host lab-1
# Rules (sources.toml, hosts.toml, routing.toml, reproducers/, metric_floors.toml) come from
# the /rules volume; the SQLite store (and plots when no Slack token is set) lives on /data.
# The Slack token comes from the environment (SLACK_BOT_TOKEN), never from the image; without
# it, notifications go to the container's output (docker logs).
FROM python:3.11-slim-bookworm

ENV DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1
# The benchmarks a local lab host runs natively (the templates of rules/reproducers/), and the
# SSH client for remote lab hosts.
RUN apt-get update \
 && apt-get install -y --no-install-recommends fio sysbench stress-ng fsmark dbench postmark rt-tests \
    btrfs-progs openssh-client \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/triagebot
COPY pyproject.toml README.md ./
COPY triagebot ./triagebot
COPY rules ./rules
RUN python3 -m pip install --no-cache-dir ".[postgres]"

RUN useradd --system --create-home --home-dir /home/triage triage \
 && mkdir -p /data /rules && cp -r rules/. /rules/ && chown -R triage /data
USER triage
ENV TRIAGE_DB=/data/triage.db TRIAGE_RULES=/rules
VOLUME ["/data"]
EXPOSE 9464
HEALTHCHECK --interval=60s --timeout=5s --start-period=30s \
  CMD python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9464/healthz', timeout=4)"
ENTRYPOINT ["triage"]
# /healthz and /metrics on every interface of the container, so the published port reaches them.
CMD ["daemon", "--health-address", "0.0.0.0"]
