# A Headwater node: every role by default (HEADWATER_ROLES narrows it). See README "Scaling out".
FROM node:20

WORKDIR /app
COPY package.json package-lock.json ./
# npm ci runs the prepare script, which skips the build until the sources are copied below.
COPY scripts ./scripts
RUN npm ci
COPY . .
RUN npm run build && npm prune --omit=dev

# The node's own directory (read models, caches; the embedded log and bus when those are used).
RUN mkdir -p /data && chown node:node /data
USER node
ENV HEADWATER_HOST=0.0.0.0 \
    PORT=8080 \
    HEADWATER_DATA_DIR=/data
VOLUME /data
EXPOSE 8080

CMD ["node", "--no-node-snapshot", "dist/src/cli/main.js", "start"]
