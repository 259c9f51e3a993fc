# The reviewer's environment: the whole suite in one image.
# No registry is reachable on our machines, so the base defaults to the Debian
# image that scripts/setup_docker.sh imports from debootstrap; where a registry is
# reachable, --build-arg BASE=debian:bookworm works the same.
#   docker build -t logbench/suite .
#   docker run --rm --privileged logbench/suite bash run.sh test
# --privileged: the studies create a mount namespace (private /dev/log) and a
# network namespace (the remote syslog host), as they do on a host.
# Behind a TLS-intercepting proxy, pip in the build needs the proxy's CA: copy it in
# and set PIP_CERT before the set-up step (checked that way on our build machines).
ARG BASE=logbench/debian:bookworm
FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
WORKDIR /logbench
COPY scripts/apt-packages.txt scripts/apt-packages.txt
COPY scripts/setup.sh scripts/setup.sh
COPY pyproject.toml pyproject.toml
COPY lib lib
RUN bash scripts/setup.sh && rm -rf /var/lib/apt/lists/*
COPY . .
CMD ["bash", "run.sh", "study"]
