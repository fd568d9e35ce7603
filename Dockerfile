# Nextcloud Access Broker — container image.
# Multi-stage: build the TypeScript in one stage, install production dependencies in
# another, and run from a slim image as a user of its own (uid 10001) with nothing
# writable but /app/data.

# Pinned Node LTS (24, as .node-version) on Debian bookworm slim.
ARG NODE_IMAGE=node:24.22.3-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
# better-sqlite3 takes the prebuilt binary inside its package, or builds one against this
# Node's headers where none fits (hence the toolchain).
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
    && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts && npm rebuild better-sqlite3
COPY tsconfig.json tsconfig.build.json ./
COPY broker ./broker
COPY cli ./cli
COPY fakes ./fakes
# scripts/build-cli.ts bundles the agent's file, dist/broker-cli.mjs (docs/clients.md).
COPY scripts ./scripts
RUN npm run build

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
    && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# Production dependencies only; the build already happened in the stage above.
RUN npm ci --omit=dev --ignore-scripts && npm rebuild better-sqlite3

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json config.yaml.example LICENSE ./
COPY bin ./bin
# Security: the daemon never runs as root, and not as uid 1000 either (the image's `node`
# user, and on most hosts the desktop user who also runs the agent): the owner socket in
# the data folder belongs, on the host, to the uid the daemon runs as, and whoever has
# that uid is the owner. A system user of its own, 10001, which no host user has.
# Its data folder is private (0700) before the first start, as the broker keeps it.
RUN groupadd --system --gid 10001 broker \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin broker \
    && mkdir -p /app/data && chmod 700 /app/data && chown 10001:10001 /app/data
USER 10001:10001
# Grant database, audit log and checkpoint live here; everything else is read-only.
VOLUME ["/app/data"]
EXPOSE 8765
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8765/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# A small young generation keeps the daemon's peak memory under 150 MB while it
# streams gigabytes; without V8's memory reducer a transfer after an idle spell costs
# ~1.2 instead of ~2.9 CPU-seconds per GiB (bench/RESULTS.md measures with both flags;
# the same flags as `npm start` and the runbook's systemd unit).
ENTRYPOINT ["node", "--max-semi-space-size=4", "--initial-old-space-size=64", "--no-memory-reducer", "bin/broker.js"]
CMD ["serve", "--config", "/app/config.yaml"]
