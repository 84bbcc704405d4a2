# kgsync: a static binary (pure Go, CGO_ENABLED=0; SQLite is modernc.org/sqlite)
# on distroless/static, which carries CA certificates and tzdata (schedules use
# IANA time zones) and runs as the nonroot user (uid 65532).
#
#   docker build -t kgsync .
#   docker run --rm -p 8080:8080 -v $PWD/deploy/kgsync.yaml:/etc/kgsync/kgsync.yaml:ro kgsync
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /out/kgsync ./cmd/kgsync

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/kgsync /usr/local/bin/kgsync
WORKDIR /var/lib/kgsync
EXPOSE 8080
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/kgsync"]
CMD ["daemon", "--config", "/etc/kgsync/kgsync.yaml"]
