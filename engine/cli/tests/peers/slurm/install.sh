#!/usr/bin/env bash
# Installs the single-node Slurm that engine/cli/tests/integration/slurm.rs starts: Debian's
# slurm-wlm (slurmctld, slurmd, sbatch) and munge (the authentication Slurm requires).
# Idempotent and quick when already installed: it only asks apt when a binary is missing.
# Needs root (apt-get); the test itself writes its configuration to a temporary directory and
# starts and stops the daemons, so nothing here is started or enabled.
set -euo pipefail
missing=0
for binary in slurmctld slurmd sbatch squeue munged; do
    command -v "$binary" >/dev/null 2>&1 || [ -x "/usr/sbin/$binary" ] || missing=1
done
if [ "$missing" = 0 ]; then
    echo "slurm: already installed ($(dpkg-query -W -f='${Version}' slurm-wlm))"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
# policy-rc.d 101: a package's postinst must not start its daemon here (the test starts its own).
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created_policy=1
fi
# Another apt-get (a parallel CI step, unattended upgrades) holds the lock for a while: wait.
lock_wait=(-o DPkg::Lock::Timeout=600)
install() { apt-get "${lock_wait[@]}" install -y --no-install-recommends slurm-wlm munge; }
install || { apt-get "${lock_wait[@]}" update && install; }
if [ "$created_policy" = 1 ]; then rm -f "$policy"; fi
echo "slurm: installed ($(dpkg-query -W -f='${Version}' slurm-wlm))"
