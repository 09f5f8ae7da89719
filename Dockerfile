# lamport-lock peer image: one peer process per container (docs/design.md section 7).
#   docker build -t lamport-lock .
#   docker compose up            (three peers and their workers: docker-compose.yml)
# Stage 1 compiles the TypeScript with the dev dependencies; stage 2 carries only the
# production dependencies and dist/, and runs as the unprivileged `node` user.

ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /build
COPY package.json package-lock.json ./
# --ignore-scripts: the prepare script (tsc) runs below, once the sources are in.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY bin ./bin
RUN npx tsc -p tsconfig.json

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /build/dist/src ./dist/src
COPY --from=build /build/dist/bin ./dist/bin
# The two binaries on PATH, as `npm install -g` would put them.
RUN chmod 0755 dist/bin/lamport-peer.js dist/bin/lamport-lock.js \
 && ln -s /app/dist/bin/lamport-peer.js /usr/local/bin/lamport-peer \
 && ln -s /app/dist/bin/lamport-lock.js /usr/local/bin/lamport-lock \
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
ENTRYPOINT ["node", "/app/dist/bin/lamport-peer.js", "--config", "/etc/lamport/cluster.json", "--data-dir", "/var/lib/lamport", "--no-log-pretty"]
CMD ["--id", "a", "--http", "0.0.0.0:7000"]
