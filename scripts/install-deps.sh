#!/bin/sh
# Installs what building and testing profrun needs on Debian 12 (run as root, or with
# sudo available). Does nothing when everything is already there.
set -e
PKGS="build-essential pkg-config libunwind-dev libdw-dev libjansson-dev libprotobuf-c-dev protobuf-c-compiler protobuf-compiler zlib1g-dev libcriterion-dev python3 python3-pytest python3-torch libtorch-dev openmpi-bin libopenmpi-dev slurm-wlm clang libclang-rt-14-dev chromium"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
echo "install-deps: installing$missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
