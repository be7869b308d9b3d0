# The natsfleet image for those with a container registry: the same image `make image` builds
# with Debian's tools alone (scripts/make-image.sh): the package on Debian 12, run as uid 65532.
#
#   docker build -t natsfleet:0.1.0 .
#   docker run --rm -e NATS_URL=nats://broker:4222 -v $PWD/natsfleet.toml:/etc/natsfleet/natsfleet.toml natsfleet:0.1.0

FROM debian:12 AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/
RUN apt-get update && bash scripts/install-deps.sh demo && \
    apt-get install -y --no-install-recommends dpkg-dev file help2man python3 && \
    rm -rf /var/lib/apt/lists/*
COPY . .
RUN rm -rf build && \
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNATSFLEET_TESTS=OFF && \
    cmake --build build -j "$(nproc)" && \
    cd build && cpack -G DEB

FROM debian:12-slim
# The user first, so that the package's postinst keeps this uid (deploy/kubernetes' runAsUser).
RUN groupadd --gid 65532 natsfleet && \
    useradd --uid 65532 --gid 65532 --home-dir /var/lib/natsfleet --no-create-home \
      --shell /usr/sbin/nologin --comment "natsfleet daemon" natsfleet
COPY --from=build /src/build/natsfleet_*.deb /tmp/
RUN apt-get update && \
    apt-get install -y --no-install-recommends ca-certificates /tmp/natsfleet_*.deb && \
    rm -rf /var/lib/apt/lists/* /tmp/*.deb
LABEL org.opencontainers.image.title=natsfleet \
      org.opencontainers.image.licenses=Apache-2.0 \
      org.opencontainers.image.base.name=debian:bookworm
USER 65532:65532
WORKDIR /var/lib/natsfleet
EXPOSE 9464/tcp
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/natsfleet"]
CMD ["run", "/etc/natsfleet/natsfleet.toml"]
