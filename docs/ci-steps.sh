# Kernel backend steps for .ci/run (bash). The NetemTests need root and network namespaces; they skip otherwise.
apt-get install -y --no-install-recommends libnl-3-dev libnl-route-3-dev pkg-config iperf3 iproute2 util-linux
# Real netem under emulation (about 100 s); run when qemu can be installed. Exit 77 means skipped.
if apt-get install -y --no-install-recommends qemu-system-x86 busybox-static xz-utils; then
    status=0
    Tests/netem-qemu/run.sh || status=$?
    if [ "$status" -ne 0 ] && [ "$status" -ne 77 ]; then exit "$status"; fi
fi
