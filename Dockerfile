# lamport-lock peer image: one peer process per container (docs/design.md section 7).
#   docker build -t lamport-lock .
#   docker compose up            (three peers and their workers: docker-compose.yml)
# Stage 1 compiles the TypeScript with the dev dependencies and packs the package tarball
# (`npm pack`: the same tarball a host installs, README "Install on a host"); stage 2
# installs that tarball globally, as a host does, so the image runs the installed
# `lamport-peer` and `lamport-lock` binaries, and runs as the unprivileged `node` user.

# Node 24 is an LTS line maintained until April 2028 (Node 20 reached its end of life in
# April 2026); Node 22 (maintained until April 2027) also works.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /build
COPY package.json package-lock.json ./
# --ignore-scripts: dist/ is built below (tsc), once the sources are in.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json README.md LICENSE ./
COPY src ./src
COPY bin ./bin
RUN npx tsc -p tsconfig.json \
 && mkdir /build/pkg \
 && npm pack --ignore-scripts --pack-destination /build/pkg

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
COPY --from=build /build/pkg /tmp/pkg
# A global install puts the two binaries in /usr/local/bin, as on a host; only the
# production dependencies are installed.
RUN npm install -g --ignore-scripts --no-audit --no-fund /tmp/pkg/lamport-lock-*.tgz \
 && rm -rf /tmp/pkg \
 && npm cache clean --force \
 && mkdir -p /var/lib/lamport /var/lib/lamport-token /etc/lamport \
 && chown node:node /var/lib/lamport /var/lib/lamport-token
USER node
# 7000: local HTTP API, dashboard and /metrics; 7100: the peer links (WebSocket).
EXPOSE 7000 7100
VOLUME ["/var/lib/lamport"]
# The port the healthcheck asks; set it when --http is another port (e.g. host networking).
ENV LAMPORT_HTTP_PORT=7000
# Slim images have no curl: ask node's fetch. /healthz answers while the process serves.
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.LAMPORT_HTTP_PORT + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The config is mounted at /etc/lamport/cluster.json and the secret comes from
# LAMPORT_SECRET. Arguments after the image name replace CMD: the peer id, and where HTTP
# listens (all container interfaces by default, so the healthcheck, other containers and a
# published port reach it; without --http, the peer's "http" entry of the config is used).
# Beyond loopback the peer requires an API token: add --token-file with a file of mode 0600
# (docker-compose.yml shows one way; /var/lib/lamport-token is a directory the node user owns).
# The installed binary is the container's first process itself (exec form: no shell, no npm
# wrapper), so `docker stop`'s SIGTERM reaches the peer and it releases its holds.
ENTRYPOINT ["lamport-peer", "--config", "/etc/lamport/cluster.json", "--data-dir", "/var/lib/lamport", "--no-log-pretty"]
CMD ["--id", "a", "--http", "0.0.0.0:7000"]
