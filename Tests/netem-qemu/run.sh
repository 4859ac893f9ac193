#!/usr/bin/env bash
# A real netem run of linkcond's kernel backend, for machines whose kernel has no sch_netem.
#
# Boots a stock Debian kernel (downloaded with apt-get download, unpacked, never installed) under
# qemu-system-x86_64 -accel tcg with a busybox initramfs holding linkcond (Swift runtime linked in),
# the libraries ldd lists, and from that kernel sch_netem, sch_htb, ifb, sch_ingress, cls_u32 and act_mirred.
# Inside, on lo:
#   uplink   (lo's egress: htb 1c0d: + netem): 100 ms of delay (ping, which crosses lo's egress twice, must
#            show ~200 ms), read back through libnl, then 20 % loss (ping must lose packets and the qdisc must
#            count drops), then clear.
#   downlink (lo's ingress: ingress qdisc + u32 match-all + mirred to lc-ifb-1, shaped there): the same with
#            downlink.delay and downlink.loss only. The uplink must read back unshaped, the ifb's netem must
#            count the pings, and clear must leave no ifb device and no ingress qdisc.
#
# Exit status: 0 passed, 1 failed, 77 skipped (qemu or busybox missing). About 1-2 minutes, most of it
# building linkcond in release mode; the boot and checks take about 25 s. Needs apt sources for the kernel.
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
for applet in sh mount insmod ip tc ping sleep cat grep sed awk reboot echo mkdir; do ln -s busybox "$root/bin/$applet"; done
# None of these depends on another module (their .modinfo says depends=), so the load order does not matter.
for module in net/sched/sch_netem net/sched/sch_htb drivers/net/ifb net/sched/sch_ingress net/sched/cls_u32 net/sched/act_mirred; do
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
printf 'downlink.delay = 100 ms\n' >"$root/down-delay.profile"
printf 'downlink.delay = 1 ms\ndownlink.loss = 20 %%\n' >"$root/down-loss.profile"

cat >"$root/init" <<'GUEST'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
# numifbs=0: no ifb0/ifb1 of the module's own, so every ifb device in the guest is linkcond's.
for module in /modules/*.ko; do
    case "$module" in */ifb.ko) insmod "$module" numifbs=0 ;; *) insmod "$module" ;; esac
done
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
echo "GUEST: apply downlink delay"
/bin/linkcond tc apply lo /down-delay.profile 2>&1 | sed 's/^/GUEST: down apply: /'
tc qdisc show | sed 's/^/GUEST: down qdiscs: /'
ping -c 5 -i 0.3 127.0.0.1 | grep -E 'round-trip|min/avg' | sed 's/^/GUEST: down delay ping: /'
/bin/linkcond tc show lo 2>&1 | sed 's/^/GUEST: down show: /'
echo "GUEST: apply downlink loss"
/bin/linkcond tc apply lo /down-loss.profile 2>&1 | sed 's/^/GUEST: down apply: /'
ping -c 200 -i 0.02 -W 1 127.0.0.1 | grep 'packet loss' | sed 's/^/GUEST: down loss ping: /'
/bin/linkcond tc show lo 2>&1 | sed 's/^/GUEST: down loss show: /'
/bin/linkcond tc clear lo 2>&1 | sed 's/^/GUEST: down clear: /'
/bin/linkcond tc show lo 2>&1 | sed 's/^/GUEST: down after clear: /'
ip link show | sed -n 's/^[0-9]*: \([^:]*\):.*/\1/p' | sed 's/^/GUEST: down links after clear: /'
tc qdisc show | sed 's/^/GUEST: down qdiscs after clear: /'
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
grep -q '^GUEST: after clear: lo: not conditioned by linkcond' "$work/guest.log" || fail "clear left something behind"

# Downlink: lo's ingress, redirected to lc-ifb-1 (lo is ifindex 1) and delayed on that device's egress.
grep -q '^GUEST: down apply: applied down-delay on lo (downlink via lc-ifb-1)$' "$work/guest.log" \
    || fail "downlink apply did not report lc-ifb-1 (lo's ifindex is 1)"
grep -q '^GUEST: down qdiscs: qdisc ingress ffff: dev lo ' "$work/guest.log" || fail "no ingress qdisc on lo after downlink apply"
grep -q '^GUEST: down qdiscs: qdisc netem 1c1e: dev lc-ifb-1 parent 1c0d:1' "$work/guest.log" \
    || fail "no netem 1c1e: under htb 1c0d:1 on lc-ifb-1 after downlink apply"
grep -q '^GUEST: down show: *downlink: *rate unlimited, delay 100 ms' "$work/guest.log" || fail "downlink read-back does not show delay 100 ms"
grep -q '^GUEST: down show: *uplink: *unshaped' "$work/guest.log" || fail "a downlink-only profile did not leave the uplink unshaped"
down_rtt=$(sed -n 's|^GUEST: down delay ping: .*= [0-9.]*/\([0-9.]*\)/.*|\1|p' "$work/guest.log")
[ -n "$down_rtt" ] || fail "no downlink ping round trip"
# On lo the echo request and the reply each arrive through lo's ingress, so each crosses the redirect to the
# ifb once: 2 x 100 ms, about 200 ms (a veth would cross it once: 100 ms; 400 ms would mean egress is shaped too).
awk -v rtt="$down_rtt" 'BEGIN { exit !(rtt >= 195 && rtt <= 300) }' \
    || fail "downlink ping round trip $down_rtt ms, expected about 200 ms (100 ms on each of the two ingress crossings)"
down_packets=$(sed -n 's|^GUEST: down show: *downlink counters: \([0-9]*\) packets.*|\1|p' "$work/guest.log" | tail -1)
# 5 requests and 5 replies went through the ifb's netem.
[ "${down_packets:-0}" -ge 10 ] || fail "the ifb's netem counted ${down_packets:-no} packets for 5 pings, expected at least 10"
down_lost=$(sed -n 's|^GUEST: down loss ping: .* \([0-9.]*\)% packet loss.*|\1|p' "$work/guest.log")
[ -n "$down_lost" ] || fail "no downlink ping loss figure"
# 20 % on each ingress crossing, request and reply: 0.8 x 0.8 survive, about 36 % lost.
awk -v lost="$down_lost" 'BEGIN { exit !(lost >= 20 && lost <= 55) }' || fail "downlink ping lost $down_lost %, expected about 36 %"
down_drops=$(sed -n 's|^GUEST: down loss show: *downlink counters: .*, \([0-9]*\) dropped|\1|p' "$work/guest.log" | tail -1)
[ "${down_drops:-0}" -gt 0 ] || fail "the ifb's netem counted no drops"
grep -q '^GUEST: down after clear: lo: not conditioned by linkcond' "$work/guest.log" || fail "downlink clear left linkcond's marks behind"
grep -q '^GUEST: down links after clear: lo$' "$work/guest.log" || fail "the device list after clear is missing"
! grep -q '^GUEST: down links after clear: lc-' "$work/guest.log" || fail "clear left an lc- device behind"
grep -q '^GUEST: down qdiscs after clear: ' "$work/guest.log" || fail "the qdisc list after clear is missing"
! grep -q '^GUEST: down qdiscs after clear: .*\(ingress\|netem\|htb\)' "$work/guest.log" \
    || fail "clear left a qdisc behind: $(sed -n 's/^GUEST: down qdiscs after clear: //p' "$work/guest.log" | tr '\n' ';')"

echo "netem-qemu: passed: uplink ping $rtt ms for 100 ms each way, $lost % ping loss and $drops netem drops for 20 %;" \
    "downlink ping $down_rtt ms for 100 ms per ingress crossing, $down_packets packets through the ifb's netem," \
    "$down_lost % ping loss and $down_drops ifb netem drops for 20 %;" \
    "boot and checks $((finished - booted)) s, total $((finished - started)) s"
