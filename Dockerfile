# A Headwater node: every role by default (HEADWATER_ROLES narrows it). See README "Scaling out".
# Node 22 LTS on Debian bookworm, slim, pinned to a patch release (bump it deliberately).
# Not built in CI: there is no Docker on the machines this project is built and tested on.
ARG NODE_IMAGE=node:22.20.0-bookworm-slim

# Build stage: the native modules (isolated-vm, better-sqlite3) compile here when no prebuilt
# binary fits, so the compilers stay out of the image that runs.
FROM ${NODE_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci runs the prepare script, which skips the build until the sources are copied below.
COPY scripts ./scripts
RUN npm ci
COPY . .
RUN npm run build && npm prune --omit=dev

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app /app
# The node's own directory (read models, caches; the embedded log and bus when those are used).
RUN mkdir -p /data && chown node:node /data
USER node
ENV HEADWATER_HOST=0.0.0.0 \
    PORT=8080 \
    HEADWATER_DATA_DIR=/data
VOLUME /data
EXPOSE 8080
# Liveness: the process answers HTTP (readiness, /readyz, is for load balancers and compose).
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

CMD ["node", "--no-node-snapshot", "dist/src/cli/main.js", "start"]
