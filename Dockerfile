# The reviewer's environment: the whole suite in one image.
# No registry is reachable on our machines, so the base defaults to the Debian
# image that scripts/setup_docker.sh imports from debootstrap; where a registry is
# reachable, --build-arg BASE=debian:bookworm works the same.
#   docker build -t logbench/suite .
#   docker run --rm --privileged logbench/suite bash run.sh test
# --privileged: the studies create a mount namespace (private /dev/log) and a
# network namespace (the remote syslog host), as they do on a host.
# Behind a TLS-intercepting proxy, pip in the build needs the proxy's CA:
# scripts/build_suite_image.sh copies the bundle pip is configured with to
# build/pip-ca.crt, which is used when present (built that way on our machines).
#   bash scripts/build_suite_image.sh   # idempotent; the image the simulated cluster runs jobs in
ARG BASE=logbench/debian:bookworm
FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
WORKDIR /logbench
COPY scripts/apt-packages.txt scripts/setup.sh scripts/setup_packages.sh scripts/
# set-up installs the local servers at their pins (setup_packages.sh reads them there)
COPY docker/servers.tsv docker/servers.tsv
COPY pyproject.toml pyproject.toml
COPY lib lib
# pyproject.toml makes the glob's optional file optional: no CA bundle, no error
COPY pyproject.toml build/pip-ca.cr[t] /tmp/pip-ca/
RUN if [ -f /tmp/pip-ca/pip-ca.crt ]; then export PIP_CERT=/tmp/pip-ca/pip-ca.crt; fi \
    && bash scripts/setup.sh && rm -rf /var/lib/apt/lists/* /tmp/pip-ca
ENV PATH=/logbench/.venv/bin:$PATH
COPY . .
CMD ["bash", "run.sh", "study"]
