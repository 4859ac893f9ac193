#!/usr/bin/env bash
# A real netem run of linkcond's kernel backend, for machines whose kernel has no sch_netem.
#
# Boots a stock Debian kernel (downloaded with apt-get download, unpacked, never installed) under
# qemu-system-x86_64 -accel tcg with a busybox initramfs holding linkcond (Swift runtime linked in),
# the libraries ldd lists, and sch_netem/sch_htb/ifb from that kernel. Inside, linkcond applies
# 100 ms of uplink delay to lo (ping, which crosses lo's egress twice, must show ~200 ms), reads it
# back through libnl, then 20 % loss (ping must lose packets and the qdisc must count drops), and clears.
#
# Exit status: 0 passed, 1 failed, 77 skipped (qemu or busybox missing). About 1-2 minutes, most of it
# building linkcond in release mode; the boot and checks take about 20 s. Needs apt sources for the kernel.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
started=$(date +%s)

skip() { echo "netem-qemu: skipped: $*"; exit 77; }
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"
busybox=$(command -v busybox || true)
[ -n "$busybox" ] || skip "busybox is not installed (apt-get install busybox-static)"
ldd "$busybox" >/dev/null 2>&1 && skip "$busybox is dynamically linked (apt-get install busybox-static)"

work=$(mktemp -d /tmp/linkcond-netem-qemu.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "netem-qemu: building linkcond (release, static Swift runtime)"
scratch="$repo/.build-netem-qemu"
swift build --package-path "$repo" --scratch-path "$scratch" -c release --static-swift-stdlib --product linkcond >"$work/build.log" 2>&1 \
    || { tail -30 "$work/build.log"; echo "netem-qemu: FAILED: linkcond does not build"; exit 1; }
linkcond="$scratch/release/linkcond"

echo "netem-qemu: fetching the stock Debian kernel"
package=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
[ -n "$package" ] || { echo "netem-qemu: FAILED: cannot resolve linux-image-amd64's kernel package"; exit 1; }
(cd "$work" && apt-get download -q "$package" >/dev/null)
dpkg-deb -x "$work"/"$package"_*.deb "$work/kernel"
version=${package#linux-image-}
vmlinuz="$work/kernel/boot/vmlinuz-$version"
modules="$work/kernel/lib/modules/$version/kernel"

root="$work/root"
mkdir -p "$root"/{bin,proc,sys,dev,tmp,modules,run/netns}
cp "$busybox" "$root/bin/busybox"
for applet in sh mount insmod ip ping sleep cat grep sed awk reboot echo mkdir; do ln -s busybox "$root/bin/$applet"; done
for module in net/sched/sch_netem net/sched/sch_htb drivers/net/ifb; do
    if [ -f "$modules/$module.ko.xz" ]; then
        xz -dc "$modules/$module.ko.xz" >"$root/modules/$(basename "$module").ko"
    else
        cp "$modules/$module.ko" "$root/modules/"
    fi
done
cp "$linkcond" "$root/bin/linkcond"
for library in $(ldd "$linkcond" | awk '/=>/ { print $3 } /^\t\// { print $1 }'); do
    mkdir -p "$root$(dirname "$library")"
    cp -L "$library" "$root$library"
done
printf 'uplink.delay = 100 ms\n' >"$root/delay.profile"
printf 'uplink.delay = 1 ms\nuplink.loss = 20 %%\n' >"$root/loss.profile"

cat >"$root/init" <<'GUEST'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for module in /modules/*.ko; do insmod "$module"; done
ip link set lo up
export HOME=/tmp
echo "GUEST: apply delay"
/bin/linkcond tc apply lo /delay.profile
/bin/linkcond tc show lo | sed 's/^/GUEST: show: /'
ping -c 5 -i 0.3 127.0.0.1 | grep -E 'round-trip|min/avg' | sed 's/^/GUEST: delay ping: /'
echo "GUEST: apply loss"
/bin/linkcond tc apply lo /loss.profile
ping -c 200 -i 0.02 -W 1 127.0.0.1 | grep 'packet loss' | sed 's/^/GUEST: loss ping: /'
/bin/linkcond tc show lo | sed 's/^/GUEST: show: /'
/bin/linkcond tc clear lo | sed 's/^/GUEST: clear: /'
/bin/linkcond tc show lo | sed 's/^/GUEST: after clear: /'
echo "GUEST: done"
reboot -f
GUEST
chmod +x "$root/init"
(cd "$root" && find . | "$busybox" cpio -o -H newc 2>/dev/null | gzip -1) >"$work/initrd.gz"

echo "netem-qemu: booting $package under qemu (tcg)"
booted=$(date +%s)
timeout 600 qemu-system-x86_64 -accel tcg -m 512 -smp 1 -nographic -no-reboot \
    -kernel "$vmlinuz" -initrd "$work/initrd.gz" -append "console=ttyS0 quiet panic=-1" \
    >"$work/console.log" 2>&1 || true
tr -d '\r' <"$work/console.log" | grep '^GUEST:' | tee "$work/guest.log"
finished=$(date +%s)

fail() { echo "netem-qemu: FAILED: $*"; echo "--- console tail"; tail -40 "$work/console.log"; exit 1; }
grep -q '^GUEST: done' "$work/guest.log" || fail "the guest did not finish"
grep -q 'show: *uplink: *rate unlimited, delay 100 ms' "$work/guest.log" || fail "read-back does not show delay 100 ms"
rtt=$(sed -n 's|^GUEST: delay ping: .*= [0-9.]*/\([0-9.]*\)/.*|\1|p' "$work/guest.log")
[ -n "$rtt" ] || fail "no ping round trip"
awk -v rtt="$rtt" 'BEGIN { exit !(rtt >= 195 && rtt <= 300) }' || fail "ping round trip $rtt ms, expected about 200 ms (100 ms each way through lo's egress)"
lost=$(sed -n 's|^GUEST: loss ping: .* \([0-9.]*\)% packet loss.*|\1|p' "$work/guest.log")
[ -n "$lost" ] || fail "no ping loss figure"
# 20 % each way through lo's egress: a ping survives with 0.8 x 0.8, so about 36 % are lost.
awk -v lost="$lost" 'BEGIN { exit !(lost >= 20 && lost <= 55) }' || fail "ping lost $lost %, expected about 36 %"
drops=$(sed -n 's|^GUEST: show: *uplink counters: .*, \([0-9]*\) dropped|\1|p' "$work/guest.log" | tail -1)
[ "${drops:-0}" -gt 0 ] || fail "netem's qdisc counted no drops"
grep -q 'after clear: lo: not conditioned by linkcond' "$work/guest.log" || fail "clear left something behind"

echo "netem-qemu: passed: ping $rtt ms for 100 ms each way, $lost % ping loss and $drops netem drops for 20 %;" \
    "boot and checks $((finished - booted)) s, total $((finished - started)) s"
