# Meridian in a container: the binary from this checkout, the claude CLI
# from npm at the version the tests pin (scripts/claude-version), a
# non-root user, the data dir and the CLI's login as volumes. It listens
# beyond loopback, so it needs an admin key, MERIDIAN_ADMIN_KEY. See docs/container.md.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/meridian ./cmd/meridian

FROM node:22-bookworm-slim
ARG CLAUDE_VERSION=2.1.332
RUN npm install -g --no-audit --no-fund "@anthropic-ai/claude-code@${CLAUDE_VERSION}" \
 && npm cache clean --force \
 && useradd --create-home --uid 10001 meridian \
 && mkdir -p /data /home/meridian/.claude \
 && chown meridian:meridian /data /home/meridian/.claude
COPY --from=build /out/meridian /usr/local/bin/meridian
USER meridian
ENV HOME=/home/meridian MERIDIAN_DATA_DIR=/data MERIDIAN_HOST=0.0.0.0
VOLUME ["/data", "/home/meridian/.claude"]
EXPOSE 3456
ENTRYPOINT ["meridian"]
CMD ["serve"]
