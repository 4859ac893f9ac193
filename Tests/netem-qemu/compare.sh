#!/usr/bin/env bash
# How close linkcond comes to real Linux TCP: the same client/server (tcpprobe.c) over the same link, once as
# real TCP (the stock Debian kernel's CUBIC over netem, inside qemu, all cells in one boot; compare-guest.sh)
# and once through `linkcond run` on the host's loopback (or, with --exec, the probe itself run inside
# `linkcond exec`, so its own kernel TCP crosses the emulated link as packets), side by side. Not part of CI.
#
# Usage: Tests/netem-qemu/compare.sh [--linkcond PATH] [--quick] [--runs N] [--bulk-seconds S]
#            [--bulk-runs N] [--rates "1 10"] [--rtts "10 50 200"] [--losses "0 0.5 2"] [--latency-seconds S]
#            [--real FILE] [--linkcond-queue NAME=PROFILE-LINES]... [--linkcond-lines PROFILE-LINES]
#            [--guest-offloads off|on] [--exec] [--cells "RATE/RTT/LOSS ..."] [--fetches "BYTES ..."] [--capture]
#            [--udp] [--udp-loads "LOAD ..."] [--udp-seconds S] [--out DIR]
#   --linkcond        the binary under test (default .build/release/linkcond; build it first)
#   --cells           these cells instead of every combination of --rates, --rtts and --losses
#   --fetches         the fetches each run makes, of "10000 100000 1000000" (the default; the 1 MB fetch brings
#                     the request after idle with it), e.g. "10000" for many runs of the handshake's cases
#   (default)         3 runs per transfer (median), one 20 s bulk run, 20 s latency runs: about 18 minutes
#   --quick           1 run per transfer, 5 s bulk, 8 s latency runs: about 7 minutes (410 s here); a smoke
#                     test, not a verdict: 5 s of bulk at 200 ms is still mostly slow start
#   --real FILE       reuse the real-TCP samples of an earlier run (its raw.csv, e.g. the kept baseline
#                     Tests/netem-qemu/baseline/raw.csv) instead of booting qemu: only linkcond is measured
#   --exec            measure `linkcond exec` instead of the proxy: each probe runs inside the namespace and
#                     reaches the server at 198.18.0.2 (the host's loopback through the link); the rate is set
#                     per IP packet (R x 1500/1448), as exec counts whole packets. The namespaces need the
#                     guest's congestion control (cubic) in net.ipv4.tcp_allowed_congestion_control: as root
#                     it is added for the run and the old list put back afterwards
#   --capture         the guest also captures every TCP segment of each shaped cell's fetches on the server's and
#                     the client's interface (tcpprobe capture) into DIR/guest.log as "GUEST: capture" lines: what
#                     each side sent and received, so a loss, a lost ACK and each repair can be told apart
#   --udp             a UDP flood instead of the TCP probes: for each shaped cell, --runs floods of 1200-byte
#                     datagrams for --udp-seconds (default 5) at each of --udp-loads times the rate (default
#                     "0.5 2": under the rate, where loss alone thins the flow, and over it, where netem's order
#                     shows: loss drawn as a packet enters leaves the rate whole for the rest). Both sides count
#                     frames here (netem's rate, and `bandwidth.counts = frames`), so the guest's rate is R itself.
#                     The TCP options (--fetches, --capture, --linkcond-lines, --exec) do not apply; DIR gets
#                     report.md and report.csv
#   --bulk-runs N     bulk runs per cell (default 1; their median is reported): a lossy long-RTT cell varies
#                     between runs by more than the targets, on both sides
#   --linkcond-queue  also measure linkcond's working latency with these extra profile lines, for a queue
#                     discipline the profile format offers (';' separates lines)
#   --linkcond-lines  extra profile lines for every shaped cell's linkcond profile (';' separates lines), e.g.
#                     'tcp.segmentation-offload = off'
#   --guest-offloads  off (default): tso, gso and gro off on every guest interface. on: the client's and the
#                     server's interfaces keep GSO and turn GRO on, as hosts with a NIC's offloads (see
#                     compare-guest.sh); the router's stay off, so it queues and drops single segments either way.
#                     Linux's TCP (4.19 and later) sends units sized by tcp_tso_autosize in both: it builds GSO
#                     packets whatever ethtool says; the modes differ in the receiver's GRO
# Writes DIR/raw.csv (every sample), DIR/report.md, DIR/report.json, DIR/report.csv and the guest's log
# (default DIR .build/netem-compare) and prints the markdown report. Exit status 0, 1 if the guest failed,
# 2 for a usage or setup error.
#
# The link of a cell: rate R both ways, RTT split evenly between the directions, loss L on each direction,
# a bottleneck buffer of 256 KiB (linkcond's default `queue`; in the guest 182 full segments).
# Rates count payload: linkcond's bandwidth counts payload bytes, netem and htb count frames, so the guest's
# bottleneck runs at R x 1514/1448 (a 1448-byte segment with timestamps is a 1514-byte Ethernet frame).
# qemu, linkcond and the probes run at nice -5 when allowed (as root), so other processes' builds on a shared
# machine disturb the guest's timing less; emulation still adds a floor, which the report's first row shows.
set -Eeuo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
linkcond="$repo/.build/release/linkcond"
runs=3 bulk_runs=1 bulk_seconds=20 floor_bulk_seconds=5 latency_seconds=20
rates="1 10" rtts="10 50 200" losses="0 0.5 2"
idle_ms=2000 idle_bytes=100000
queue_bytes=262144
latency_rate=10 latency_rtt=50
real_samples=""
cell_list=""
fetches="10000 100000 1000000"
exec_mode=""
capture=0
guest_offloads=off
linkcond_lines=""
udp_mode="" udp_loads="0.5 2" udp_seconds=5 udp_bytes=1200
out="$repo/.build/netem-compare"
declare -A linkcond_queues=()

while [ $# -gt 0 ]; do
    case $1 in
        --linkcond) linkcond=$2; shift 2 ;;
        --quick) runs=1 bulk_seconds=5 floor_bulk_seconds=3 latency_seconds=8; shift ;;
        --runs) runs=$2; shift 2 ;;
        --bulk-seconds) bulk_seconds=$2; shift 2 ;;
        --bulk-runs) bulk_runs=$2; shift 2 ;;
        --rates) rates=$2; shift 2 ;;
        --rtts) rtts=$2; shift 2 ;;
        --losses) losses=$2; shift 2 ;;
        --cells) cell_list=$2; shift 2 ;;
        --fetches) fetches=$2; shift 2 ;;
        --latency-seconds) latency_seconds=$2; shift 2 ;;
        --real) real_samples=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
        --linkcond-queue) linkcond_queues[${2%%=*}]=${2#*=}; shift 2 ;;
        --exec) exec_mode=1; shift ;;
        --capture) capture=1; shift ;;
        --guest-offloads) guest_offloads=$2; shift 2 ;;
        --linkcond-lines) linkcond_lines=$2; shift 2 ;;
        --udp) udp_mode=1; shift ;;
        --udp-loads) udp_loads=$2; shift 2 ;;
        --udp-seconds) udp_seconds=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) echo "compare: unknown option \"$1\" (see the usage at the top of $0)" >&2; exit 2 ;;
    esac
done
for size in $fetches; do
    case $size in 10000 | 100000 | 1000000) ;; *) echo "compare: --fetches \"$size\": expected 10000, 100000 or 1000000" >&2; exit 2 ;; esac
done
case $guest_offloads in off | on) ;; *) echo "compare: --guest-offloads \"$guest_offloads\": expected off or on" >&2; exit 2 ;; esac
for load in $udp_loads; do
    [[ $load =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v l="$load" 'BEGIN { exit !(l > 0) }' \
        || { echo "compare: --udp-loads \"$load\": expected positive numbers" >&2; exit 2; }
done
[ -z "$udp_mode" ] || [ -z "$exec_mode" ] || { echo "compare: --udp and --exec cannot be combined" >&2; exit 2; }
for number in $runs $bulk_runs $bulk_seconds $latency_seconds $udp_seconds; do
    [[ $number =~ ^[1-9][0-9]*$ ]] || { echo "compare: \"$number\": expected a positive whole number" >&2; exit 2; }
done
[ -x "$linkcond" ] || { echo "compare: no linkcond binary at $linkcond (swift build -c release, or give --linkcond PATH)" >&2; exit 2; }
[ -z "$real_samples" ] || [ -f "$real_samples" ] || { echo "compare: --real $real_samples: no such file" >&2; exit 2; }
if [ -z "$real_samples" ]; then
    command -v qemu-system-x86_64 >/dev/null || { echo "compare: qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)" >&2; exit 2; }
    busybox=$(command -v busybox || true)
    [ -n "$busybox" ] && ! ldd "$busybox" >/dev/null 2>&1 || { echo "compare: needs a static busybox (apt-get install busybox-static)" >&2; exit 2; }
    for tool in /usr/sbin/ip /usr/sbin/tc /usr/sbin/ethtool; do
        [ -x $tool ] || { echo "compare: $tool is missing (apt-get install iproute2 ethtool)" >&2; exit 2; }
    done
fi

mkdir -p "$out"
allowed_before=""
if [ -n "$exec_mode" ]; then
    allowed_before=$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)
    case " $allowed_before " in
        *" cubic "*) allowed_before="" ;;
        *) echo "$allowed_before cubic" >/proc/sys/net/ipv4/tcp_allowed_congestion_control 2>/dev/null \
               || { echo "compare: --exec needs cubic in net.ipv4.tcp_allowed_congestion_control (run as root)" >&2; exit 2; } ;;
    esac
fi
work=$(mktemp -d /tmp/linkcond-compare.XXXXXX)
guest_pid="" lc_pid="" server_pid=""
cleanup() {
    local pid
    for pid in "$guest_pid" "$lc_pid" "$server_pid" $(cat "$work/qemu.pid" 2>/dev/null || true); do
        [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    [ -z "$allowed_before" ] || echo "$allowed_before" >/proc/sys/net/ipv4/tcp_allowed_congestion_control
    rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "compare: stopped: \"$BASH_COMMAND\" failed (line $LINENO)" >&2' ERR
started=$(date +%s)
boost=()
nice -n -5 true 2>/dev/null && boost=(nice -n -5)
echo "compare: $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores," \
    "linkcond $linkcond, $runs runs per transfer, bulk $bulk_seconds s"

cc -static -O2 -Wall -o "$work/tcpprobe" "$here/tcpprobe.c"

# One line per cell: rate_mbit rtt_ms loss_pct wire_bit_per_s delay_each_ms queue_packets; rate 0 is unshaped.
queue_packets=$(( (queue_bytes + 1447) / 1448 ))
# A flood's datagrams are smaller: the guest's queue holds as many whole frames as linkcond's queue bytes do.
[ -z "$udp_mode" ] || queue_packets=$(( queue_bytes / (udp_bytes + 42) ))
wire_rate() {
    if [ -n "$udp_mode" ]; then awk -v r="$1" 'BEGIN { printf "%d", r * 1e6 }'
    else awk -v r="$1" 'BEGIN { printf "%d", r * 1e6 * 1514 / 1448 }'; fi
}
half() { awk -v t="$1" 'BEGIN { printf "%g", t / 2 }'; }
{
    echo "0 0 0 0 0 0"
    if [ -n "$cell_list" ]; then
        for cell in $cell_list; do
            IFS=/ read -r rate rtt loss <<<"$cell"
            echo "$rate $rtt $loss $(wire_rate "$rate") $(half "$rtt") $queue_packets"
        done
    else
        for rate in $rates; do for rtt in $rtts; do for loss in $losses; do
            echo "$rate $rtt $loss $(wire_rate "$rate") $(half "$rtt") $queue_packets"
        done; done; done
    fi
} >"$work/cells"

boot_guest() {
    local package version modules root
    package=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
    [ -n "$package" ] || { echo "compare: cannot resolve linux-image-amd64's kernel package" >&2; return 1; }
    (cd "$work" && apt-get download -q "$package" >/dev/null 2>&1)
    dpkg-deb -x "$work"/"$package"_*.deb "$work/kernel"
    version=${package#linux-image-}
    modules="$work/kernel/lib/modules/$version/kernel"
    root="$work/root"
    mkdir -p "$root"/{bin,proc,sys,dev,tmp,run,modules,usr/sbin}
    cp "$busybox" "$root/bin/busybox"
    for applet in sh mount insmod ping sleep cat grep sed awk tr tail reboot echo mkdir uname; do ln -s busybox "$root/bin/$applet"; done
    # None of these depends on another module (their .modinfo says depends=); fq_codel is built in.
    for module in drivers/net/veth net/sched/sch_netem net/sched/sch_htb net/sched/sch_codel; do
        if [ -f "$modules/$module.ko.xz" ]; then xz -dc "$modules/$module.ko.xz" >"$root/modules/$(basename "$module").ko"
        else cp "$modules/$module.ko" "$root/modules/"; fi
    done
    cp "$work/tcpprobe" "$root/bin/tcpprobe"
    for tool in /usr/sbin/ip /usr/sbin/tc /usr/sbin/ethtool; do
        cp "$tool" "$root$tool"
        for library in $(ldd "$tool" | awk '/=>/ { print $3 } /^\t\// { print $1 }'); do
            mkdir -p "$root$(dirname "$library")"
            cp -L "$library" "$root$library"
        done
    done
    cp "$here/compare-guest.sh" "$root/compare-guest.sh"
    cp "$work/cells" "$root/cells"
    cat >"$root/compare.conf" <<CONF
RUNS=$runs
FETCHES="$fetches"
BULK_RUNS=$bulk_runs
BULK_SECONDS=$bulk_seconds
FLOOR_BULK_SECONDS=$floor_bulk_seconds
IDLE_MS=$idle_ms
IDLE_BYTES=$idle_bytes
LATENCY_SECONDS=$latency_seconds
OFFLOADS=$guest_offloads
CAPTURE=$capture
UDP=${udp_mode:-0}
UDP_LOADS="$udp_loads"
UDP_SECONDS=$udp_seconds
UDP_BYTES=$udp_bytes
LATENCY_QDISCS="fifo codel fq_codel"
LATENCY_CELL="$latency_rate $latency_rtt $(wire_rate $latency_rate) $(half $latency_rtt) $queue_packets"
CONF
    cat >"$root/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs run /run
mkdir -p /run/netns
for module in /modules/*.ko; do insmod "$module"; done
export HOME=/tmp
/bin/sh /compare-guest.sh
reboot -f
INIT
    chmod +x "$root/init"
    (cd "$root" && find . | "$busybox" cpio -o -H newc 2>/dev/null | gzip -1) >"$work/initrd.gz"
    echo "compare: booting $package under qemu (tcg) for the real-TCP half"
    timeout 7200 "${boost[@]}" qemu-system-x86_64 -accel tcg -m 512 -smp 1 -nographic -no-reboot -pidfile "$work/qemu.pid" \
        -kernel "$work/kernel/boot/vmlinuz-$version" -initrd "$work/initrd.gz" -append "console=ttyS0 quiet panic=-1" \
        >"$work/console.log" 2>&1 || true
    rm -f "$work/qemu.pid"
    tr -d '\r' <"$work/console.log" | grep '^GUEST:' >"$work/guest.log" || true
    cp "$work/console.log" "$out/console.log"
    cp "$work/guest.log" "$out/guest.log"
    grep -q '^GUEST: done' "$work/guest.log" || { echo "compare: the guest did not finish; see $out/console.log" >&2; return 1; }
    awk '$2 == "sample" { print "real," $3 "," $4 "," $5 "," $6 "," $7 "," $8 }
         $2 == "udp" { print "real," $3 "," $4 "," $5 ",udp_" $7 ":" $6 "," $8 "," $9 }
         $2 == "latency" && NF == 10 { c = "real," $4 "," $5 ",0,latency:" $3 ":"
                                       print c "idle,1," $6; print c "loaded_p50,1," $7; print c "loaded_p90,1," $8
                                       print c "loaded_mbit,1," $10 }' \
        "$work/guest.log" >"$work/real.csv"
    grep -v '^GUEST: \(sample\|capture\|udp\)' "$work/guest.log" | sed 's/^GUEST: /compare: guest: /'
}

# start_probe_server MODE [ARGS...]: starts `tcpprobe MODE 127.0.0.1 0 ARGS` (the TCP server, or a UDP sink) in
# the background, its output in server.out, and waits for its port; sets server_pid and server_port (empty if it
# did not start).
start_probe_server() {
    local mode=$1
    shift
    server_port=""
    # Removed first: the background job truncates server.out only when it starts, so a busy machine would let
    # the loop below read the previous cell's (dead) server port.
    rm -f "$work/server.out"
    "${boost[@]}" "$work/tcpprobe" "$mode" 127.0.0.1 0 "$@" >"$work/server.out" &
    server_pid=$!
    for _ in $(seq 1 100); do
        server_port=$(awk '/^ready/ { print $2 }' "$work/server.out" 2>/dev/null || true)
        [ -n "$server_port" ] && return 0
        sleep 0.05
    done
    echo "compare: tcpprobe $mode did not start" >&2
    return 1
}

# run_linkcond KIND PROFILE-FILE ARGS...: starts `linkcond run ARGS --profile PROFILE-FILE` and waits for its
# "ready KIND" line (tcp or udp); sets lc_pid and lc_port, or says why not and fails.
run_linkcond() {
    local kind=$1 profile=$2
    shift 2
    lc_port=""
    rm -f "$work/lc.out"
    "${boost[@]}" "$linkcond" run "$@" --profile "$profile" >"$work/lc.out" 2>>"$work/linkcond.log" &
    lc_pid=$!
    for _ in $(seq 1 200); do
        lc_port=$(sed -n "s/^ready $kind 127\.0\.0\.1:\([0-9]*\) .*/\1/p" "$work/lc.out" 2>/dev/null || true)
        [ -n "$lc_port" ] && return 0
        kill -0 "$lc_pid" 2>/dev/null || break
        sleep 0.05
    done
    echo "compare: linkcond did not become ready with $profile:" >&2
    tail -5 "$work/linkcond.log" >&2
    return 1
}

# start_linkcond PROFILE-FILE: starts a fresh tcpprobe server and linkcond in front of it, so each cell starts
# with no state left by the previous one; sets server_pid, lc_pid and lc_port.
start_linkcond() {
    start_probe_server serve || return 1
    cell_profile=$1
    if [ -n "$exec_mode" ]; then
        lc_port=$server_port
        return 0
    fi
    run_linkcond tcp "$1" --listen 127.0.0.1:0 --upstream "127.0.0.1:$server_port"
}

stop_linkcond() {
    kill "$lc_pid" "$server_pid" 2>/dev/null || true
    wait "$lc_pid" "$server_pid" 2>/dev/null || true
    lc_pid="" server_pid=""
}

# probe ARGS...: one tcpprobe client run; a failure is reported and leaves the sample out rather than the cell.
# With --exec the probe runs inside `linkcond exec` with the cell's profile, and 127.0.0.1 becomes the gateway
# address that stands for the host's loopback.
probe() {
    if [ -n "$exec_mode" ]; then
        local mode=$1 host=$2; shift 2
        [ "$host" != 127.0.0.1 ] || host=198.18.0.2
        "${boost[@]}" "$linkcond" exec --profile "$cell_profile" --control 127.0.0.1:0 -- \
            "$work/tcpprobe" "$mode" "$host" "$@" 2>>"$work/linkcond.log" \
            || echo "compare: linkcond exec side: tcpprobe $mode $host $* failed (exit $?)" >&2
        return
    fi
    "${boost[@]}" "$work/tcpprobe" "$@" || echo "compare: linkcond side: tcpprobe $* failed (exit $?)" >&2
}

# The profile's rate for R Mbit/s of payload: exec counts whole IP packets (1500 bytes for 1448 of payload).
profile_rate() {
    if [ -n "$exec_mode" ]; then awk -v r="$1" 'BEGIN { printf "%d kbit/s", r * 1000 * 1500 / 1448 }'; else echo "$1 Mbit/s"; fi
}

# The same probe sequence as the guest's, through linkcond on loopback, written as raw CSV rows.
measure_linkcond() {
    local rate rtt loss wire delay queue profile run size bulk after_idle
    while read -r rate rtt loss wire delay queue; do
        profile="$work/cell.profile"
        if [ "$rate" = 0 ]; then
            echo "description = unshaped floor" >"$profile"
            bulk=$floor_bulk_seconds
        else
            printf 'bandwidth = %s\ndelay = %s ms\nloss = %s %%\nqueue = %d B\n' "$(profile_rate "$rate")" "$delay" "$loss" "$queue_bytes" >"$profile"
            [ -z "$linkcond_lines" ] || printf '%s\n' "${linkcond_lines//;/$'\n'}" >>"$profile"
            bulk=$bulk_seconds
        fi
        start_linkcond "$profile"
        probe fetch 127.0.0.1 "$lc_port" 10000 >/dev/null
        for run in $(seq 1 "$runs"); do
            for size in $fetches; do
                after_idle=()
                [ "$size" != 1000000 ] || after_idle=("$idle_ms" "$idle_bytes")
                probe fetch 127.0.0.1 "$lc_port" "$size" "${after_idle[@]}" \
                    | awk -v c="$rate,$rtt,$loss" -v r="$run" '{ print "linkcond," c "," ($1 == "fetch" ? "fetch_" : "idle_") $2 "," r "," $3 }'
            done
        done
        for run in $(seq 1 "$bulk_runs"); do
            probe bulk 127.0.0.1 "$lc_port" "$bulk" | awk -v c="$rate,$rtt,$loss" -v r="$run" '{ print "linkcond," c ",bulk_mbit," r "," $3 }'
        done
        stop_linkcond
    done <"$work/cells"
    local name extra
    printf 'bandwidth = %s\ndelay = %s ms\nqueue = %d B\n' "$(profile_rate "$latency_rate")" "$(half $latency_rtt)" "$queue_bytes" >"$work/fifo.profile"
    for name in fifo "${!linkcond_queues[@]}"; do
        cp "$work/fifo.profile" "$work/latency.profile"
        [ "$name" = fifo ] || { extra=${linkcond_queues[$name]}; printf '%s\n' "${extra//;/$'\n'}" >>"$work/latency.profile"; }
        start_linkcond "$work/latency.profile"
        probe latency 127.0.0.1 "$lc_port" "$latency_seconds" 100 | awk -v c="linkcond,$latency_rate,$latency_rtt,0,latency:$name:" '
            { print c "idle,1," $2; print c "loaded_p50,1," $3; print c "loaded_p90,1," $4; print c "loaded_mbit,1," $6 }'
        stop_linkcond
    done
}

# flood_through_linkcond PROFILE LOAD RUN: one UDP flood through a fresh `linkcond run` with PROFILE to a fresh
# sink, as raw CSV rows named udp_sent, udp_received and udp_span_ms (like the guest's).
flood_through_linkcond() {
    local kbits
    start_probe_server sink 1000 || return 1
    run_linkcond udp "$1" --udp-listen 127.0.0.1:0 --udp-upstream "127.0.0.1:$server_port" || return 1
    kbits=$(awk -v r="$rate" -v l="$2" 'BEGIN { printf "%d", r * 1000 * l }')
    "${boost[@]}" "$work/tcpprobe" flood 127.0.0.1 "$lc_port" "$kbits" "$udp_seconds" "$udp_bytes" \
        | awk -v c="linkcond,$rate,$rtt,$loss" -v l="$2" -v r="$3" '{ print c ",udp_sent:" l "," r "," $2 }'
    wait "$server_pid"
    awk -v c="linkcond,$rate,$rtt,$loss" -v l="$2" -v r="$3" \
        '$1 == "sink" { print c ",udp_received:" l "," r "," $2; print c ",udp_span_ms:" l "," r "," $4 }' "$work/server.out"
    server_pid=""
    stop_linkcond
}

# The guest's floods through linkcond on loopback: the same cells, loads and runs.
measure_linkcond_udp() {
    local rate rtt loss wire delay queue profile load run
    while read -r rate rtt loss wire delay queue; do
        [ "$rate" != 0 ] || continue
        profile="$work/cell.profile"
        printf 'bandwidth = %s Mbit/s\nbandwidth.counts = frames\ndelay = %s ms\nloss = %s %%\nqueue = %d B\n' \
            "$rate" "$delay" "$loss" "$queue_bytes" >"$profile"
        for load in $udp_loads; do
            for run in $(seq 1 "$runs"); do flood_through_linkcond "$profile" "$load" "$run"; done
        done
    done <"$work/cells"
}

measure=measure_linkcond
[ -z "$udp_mode" ] || measure=measure_linkcond_udp
if [ -n "$real_samples" ]; then
    grep '^real,' "$real_samples" >"$work/real.csv"
    echo "compare: real-TCP samples from $real_samples"
    $measure >"$work/linkcond.csv"
else
    boot_guest >"$work/guest.out" 2>&1 &
    guest_pid=$!
    $measure >"$work/linkcond.csv"
    echo "compare: linkcond half done after $(( $(date +%s) - started )) s; waiting for the guest"
    guest_status=0
    wait "$guest_pid" || guest_status=$?
    cat "$work/guest.out"
    [ "$guest_status" -eq 0 ] || exit 1
fi

{ echo "side,rate_mbit,rtt_ms,loss_pct,metric,run,value"; cat "$work/real.csv" "$work/linkcond.csv"; } >"$out/raw.csv"
report="$here/compare-report.py" outputs="report.{md,json,csv}"
measured="$runs runs per transfer (median), bulk $bulk_seconds s"
if [ -n "$udp_mode" ]; then
    report="$here/compare-udp-report.py" outputs="report.{md,csv}"
    measured="$runs floods a load of $udp_bytes-byte datagrams for $udp_seconds s at $udp_loads times the rate"
fi
python3 "$report" "$out" \
    "$(date -u '+%Y-%m-%d'), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end, $measured, checkout $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
cat "$out/report.md"
echo "compare: finished in $(( $(date +%s) - started )) s; $out/$outputs, raw samples $out/raw.csv"
