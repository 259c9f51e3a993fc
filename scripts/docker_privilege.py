"""The ``docker run`` arguments that let a container make mount and network namespaces (the studies do):
``--privileged`` where this host grants it; else (a VM sandbox without CAP_SYS_RESOURCE: runc then refuses
``--privileged``) every capability this host's own bounding set has, unconfined. The cluster scripts
(scripts/slurm_cluster.sh, workflow/scripts/container_submit.sh) and tests/test_fresh_machine.py ask it;
standard library only, so the host's python3 runs it.

    python3 scripts/docker_privilege.py IMAGE    # the arguments on one line; IMAGE runs `true` as the probe
"""

import re
import subprocess
import sys

# Linux capability numbers 0..37, the ones every Docker engine since 20.10 knows by name.
CAPS = ("CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE "
        "NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT "
        "SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE "
        "AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ").split()


def privilege_args(image: str) -> list[str]:
    probe = subprocess.run(["docker", "run", "--rm", "--privileged", image, "true"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=60)
    if probe.returncode == 0:
        return ["--privileged"]
    with open("/proc/self/status") as f:
        bounding = int(re.search(r"^CapBnd:\s*([0-9a-f]+)$", f.read(), re.M).group(1), 16)
    return ([f"--cap-add={c}" for i, c in enumerate(CAPS) if bounding >> i & 1]
            + ["--security-opt=seccomp=unconfined", "--security-opt=apparmor=unconfined",
               "--security-opt=systempaths=unconfined"])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: docker_privilege.py IMAGE")
    print(" ".join(privilege_args(sys.argv[1])))
