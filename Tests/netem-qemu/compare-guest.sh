#!/bin/sh
# The guest half of compare.sh: runs every grid cell in one boot, printing one "GUEST: ..." line per sample.
#
# Topology (three network namespaces, so the bottleneck is a router's queue, not the sender's own qdisc, whose
# drops TCP would see at once as local congestion):
#   client (root ns, c0 198.18.0.1) ── r0 [router ns "rtr", forwarding] r1 ── s0 198.18.1.1 (ns "srv", server)
# Each direction crosses the sender's egress (netem: delay each way; a limit high enough never to drop) and then
# the router's egress towards the receiver: the bottleneck, serialising at the cell's rate into a queue of
# queue_packets, and the cell's random loss. So a packet is delayed, then serialised, as on a real path.
# The router sees one segment per packet: with OFFLOADS=off (the default) segmentation offloads are off on every
# interface; with OFFLOADS=on the client and server keep GSO and GRO but not TSO, so a unit is cut into segments as
# it leaves the sender (see the case below). Either way the sender's TCP builds units of several segments
# (tcp_tso_autosize): since Linux 4.19 ("tcp: switch to GSO being always on") sk_setup_caps gives every TCP
# socket GSO whatever the interface's features, and the interface only says where the unit is cut.
# The loss is drawn on the router, not on the sender's egress, where netem dropped the server's segments in
# pairs: the guest's counters showed every lossy 100 KB fetch resending an even number of segments (2 or 4, over
# 20 runs), and twice as many fetches escaping loss as 2 % per segment predicts: the sender's qdisc sees those GSO
# units (at least two segments, tcp_tso_autosize's min_tso_segs), cut into segments after it; the qdisc's packet
# counter counts segments either way, so it cannot tell. On the router the resent counts are 0 to 5, odd as
# often as even.
# The grid's bottleneck is netem's own rate (no delay there): it stamps each packet's departure from the
# previous one's, so a late timer under emulation delays packets but never loses capacity. htb's token bucket
# does lose it: with the guest's timers late by a few ms under TCG, htb at 10 Mbit/s carried only about 8.
# The working-latency runs need a queue discipline as the bottleneck's queue, so they use htb with a leaf
# (pfifo, codel or fq_codel) and a 30 ms burst, which absorbs that timer lateness.
#
# Reads /compare.conf (RUNS, FETCHES, BULK_SECONDS, FLOOR_BULK_SECONDS, IDLE_MS, IDLE_BYTES, LATENCY_SECONDS,
# OFFLOADS, LATENCY_QDISCS, LATENCY_CELL, CAPTURE, UDP, UDP_LOADS, UDP_SECONDS, UDP_BYTES) and /cells (one cell a line: rate_mbit rtt_ms loss_pct wire_bit_per_s
# delay_each_ms queue_packets; rate 0 is the unshaped floor). iproute2's ip and tc are called by path, never
# busybox's applets.
set -u
. /compare.conf
ip=/usr/sbin/ip
tc=/usr/sbin/tc
ethtool=/usr/sbin/ethtool
server=198.18.1.1
port=5001

$ip netns add srv
$ip netns add rtr
$ip link add c0 type veth peer name r0 netns rtr
$ip -n srv link add s0 type veth peer name r1 netns rtr
$ip addr add 198.18.0.1/24 dev c0
$ip -n rtr addr add 198.18.0.254/24 dev r0
$ip -n rtr addr add 198.18.1.254/24 dev r1
$ip -n srv addr add 198.18.1.1/24 dev s0
for ns in "" "-n rtr" "-n srv"; do $ip $ns link set lo up; done
$ip link set c0 up
$ip -n rtr link set r0 up
$ip -n rtr link set r1 up
$ip -n srv link set s0 up
$ip route add 198.18.1.0/24 via 198.18.0.254
$ip -n srv route add 198.18.0.0/24 via 198.18.1.254
$ip netns exec rtr sh -c 'echo 1 >/proc/sys/net/ipv4/ip_forward'
# The one sysctl changed from Linux's defaults: without it each connection would inherit the ssthresh the previous
# run to the same host left in the TCP metrics cache, so runs would depend on their order.
echo 1 >/proc/sys/net/ipv4/tcp_no_metrics_save
$ip netns exec srv sh -c 'echo 1 >/proc/sys/net/ipv4/tcp_no_metrics_save'
case $OFFLOADS in
    off)
        $ethtool -K c0 tso off gso off gro off 2>/dev/null
        $ip netns exec srv $ethtool -K s0 tso off gso off gro off 2>/dev/null
        $ip netns exec rtr $ethtool -K r0 tso off gso off gro off 2>/dev/null
        $ip netns exec rtr $ethtool -K r1 tso off gso off gro off 2>/dev/null
        ;;
    on)
        # The endpoints as hosts with a NIC's offloads: each sender's units (TCP builds them whatever ethtool says)
        # are cut into segments as they leave its veth, as a NIC's TSO cuts them, so the router still queues and
        # drops single segments (with TSO on, veth would hand the whole unit to the router, whose netem would then
        # queue and drop up to 45 segments as one packet); each receiver's GRO merges segments that arrive
        # together, and TCP ACKs the merged packet.
        $ethtool -K c0 tso off gso on gro on 2>/dev/null
        $ip netns exec srv $ethtool -K s0 tso off gso on gro on 2>/dev/null
        $ip netns exec rtr $ethtool -K r0 tso off gso off gro off 2>/dev/null
        $ip netns exec rtr $ethtool -K r1 tso off gso off gro off 2>/dev/null
        ;;
esac
# offloads DEV [NETNS]: DEV's tso, gso and gro, as ethtool reports them.
offloads() {
    ${2:+$ip netns exec $2} $ethtool -k "$1" | tr -d ' ' \
        | sed -n 's/^\(tcp-segmentation\|generic-segmentation\|generic-receive\)-offload:\([a-z]*\).*/\1=\2/p' | tr '\n' ' '
}
echo
echo "GUEST: kernel $(uname -r), congestion control $(cat /proc/sys/net/ipv4/tcp_congestion_control)," \
    "slow start after idle $(cat /proc/sys/net/ipv4/tcp_slow_start_after_idle), offloads $OFFLOADS:" \
    "c0 $(offloads c0) r0 $(offloads r0 rtr) r1 $(offloads r1 rtr) s0 $(offloads s0 srv)"

$ip netns exec srv /bin/tcpprobe serve $server $port >/tmp/server.out 2>&1 &
sleep 1

# Removes every qdisc the previous cell left, so each cell starts with empty queues.
unshape() {
    $tc qdisc del dev c0 root 2>/dev/null
    $tc -n rtr qdisc del dev r0 root 2>/dev/null
    $tc -n rtr qdisc del dev r1 root 2>/dev/null
    $tc -n srv qdisc del dev s0 root 2>/dev/null
}

# shape WIRE_BIT DELAY_EACH_MS LOSS_PCT QUEUE...: netem delay on both senders' egress, then the bottleneck and
# the loss on the router's egress: QUEUE is "netem" (netem's rate and loss, the grid) or a leaf qdisc under htb
# (the downlink's; the uplink's leaf is a pfifo of $queue packets; the working-latency runs have no loss).
shape() {
    wire=$1 delay=$2 loss=$3
    shift 3
    $tc -n srv qdisc add dev s0 root netem delay "${delay}ms" limit 100000
    $tc qdisc add dev c0 root netem delay "${delay}ms" limit 100000
    if [ "$1" = netem ]; then
        for dev in r0 r1; do $tc -n rtr qdisc add dev $dev root netem rate "${wire}bit" loss "${loss}%" limit "$queue"; done
        return
    fi
    burst=$((wire / 8 * 30 / 1000))
    for dev in r0 r1; do
        $tc -n rtr qdisc add dev $dev root handle 1: htb default 1 2>/dev/null
        $tc -n rtr class add dev $dev parent 1: classid 1:1 htb rate "${wire}bit" ceil "${wire}bit" \
            burst "$burst" cburst "$burst" 2>/dev/null
    done
    $tc -n rtr qdisc add dev r0 parent 1:1 handle 10: "$@"
    $tc -n rtr qdisc add dev r1 parent 1:1 handle 10: pfifo limit "$queue"
}

sample() { echo "GUEST: sample $cell $*"; }

# With CAPTURE=1, every TCP segment of a shaped cell's fetches as s0 (the server's side: all it sent, the ACKs that
# survived the router) and c0 (the client's: the data that survived, all it sent) saw it, printed after the
# fetches as "GUEST: capture RATE RTT LOSS IFACE <tcpprobe capture line>".
start_capture() {
    capture_pids=""
    [ "${CAPTURE:-0}" = 1 ] && [ "$rate" != 0 ] || return 0
    $ip netns exec srv /bin/tcpprobe capture s0 >/tmp/capture.s0 &
    capture_pids=$!
    /bin/tcpprobe capture c0 >/tmp/capture.c0 &
    capture_pids="$capture_pids $!"
    sleep 0.2
}

stop_capture() {
    [ -n "$capture_pids" ] || return 0
    sleep 0.2
    kill $capture_pids
    wait $capture_pids 2>/dev/null
    for dev in s0 c0; do awk -v prefix="GUEST: capture $cell $dev" '{ print prefix, $0 }' /tmp/capture.$dev; done
}

# The server's HyStart exits so far (TcpExt counters in its namespace): train detections and the window at
# them, delay detections and the window at them.
hystart_exits() {
    $ip netns exec srv cat /proc/net/netstat | awk '/^TcpExt:/ { if (!n) { for (i = 2; i <= NF; i++) name[i] = $i; n = 1 }
        else for (i = 2; i <= NF; i++) if (name[i] ~ /^TCPHystart/) printf "%s=%s ", substr(name[i], 11), $i }'
}

# TCP counters so far (Tcp and TcpExt), as NAME=VALUE lines: the server's (its namespace) by their kernel names,
# which linkcond-bench --model-grid reports for the model's server in the same fetches, then the client's (the
# guest's own namespace) prefixed with "client.".
tcp_counters() {
    { $ip netns exec srv cat /proc/net/snmp /proc/net/netstat; echo "Client:"; cat /proc/net/snmp /proc/net/netstat; } |
        awk '/^Client:/ { prefix = "client."; delete seen; next }
            /^(Tcp|TcpExt):/ {
                if (!($1 in seen)) { seen[$1] = 1; for (i = 2; i <= NF; i++) name[$1, i] = $i; next }
                for (i = 2; i <= NF; i++)
                    if (name[$1, i] ~ /^(RetransSegs|TCPOrigDataSent|TCPSackRecovery|TCPTimeouts|TCPLossProbes|TCPLossProbeRecovery|TCPFastRetrans|TCPLostRetransmit|TCPSackRecoveryFail|TCPSpuriousRTOs|TCPDSACKRecv|TCPSynRetrans|DelayedACKs|TCPHystartTrainDetect|TCPHystartTrainCwnd|TCPHystartDelayDetect|TCPHystartDelayCwnd)$/)
                        print prefix name[$1, i] "=" $i }'
}

# Waits (at most 10 s) until every connection to the server has finished closing at both ends, so that a
# transfer's counters hold its close (a lost FIN's resend or probe) and the next transfer's do not: the server's
# sockets have left every state but LISTEN and TIME_WAIT, the client's every state but TIME_WAIT (/proc/net/tcp:
# 06 TIME_WAIT, 0A LISTEN; ports in hex).
wait_closed() {
    local tries=0 port_hex open
    port_hex=$(printf '%04X' $port)
    while [ $tries -lt 200 ]; do
        open=$({ $ip netns exec srv cat /proc/net/tcp |
                    awk -v p=":$port_hex" 'substr($2, length($2) - 4) == p && $4 != "0A" && $4 != "06"'
                awk -v p=":$port_hex" 'substr($3, length($3) - 4) == p && $4 != "06"' /proc/net/tcp; } | wc -l)
        [ "$open" -eq 0 ] && return 0
        sleep 0.05
        tries=$((tries + 1))
    done
    echo "GUEST: cell $cell: a connection to the server was still closing after 10 s"
}

# fetch_sampled RUN BYTES [IDLE_MS BYTES2]: one tcpprobe fetch, its times as samples, and the TCP counters over
# it, its close included, as samples named counter:fetch_BYTES:NAME (with IDLE_MS, the request after idle is in
# them too).
fetch_sampled() {
    local run=$1 size=$2 before after
    before=$(tcp_counters)
    /bin/tcpprobe fetch $server $port "$size" ${3:-} ${4:-} | while read -r kind bytes ms; do
        if [ "$kind" = fetch ]; then sample "fetch_$bytes" "$run" "$ms"; else sample "idle_$bytes" "$run" "$ms"; fi
    done
    wait_closed
    after=$(tcp_counters)
    counter_samples "fetch_$size" "$run" "$before" "$after"
}

# counter_samples TRANSFER RUN BEFORE AFTER: each counter's change as a sample named counter:TRANSFER:NAME.
counter_samples() {
    printf '%s\n%s\n' "$3" "$4" | awk -F= -v run="$2" -v transfer="$1" -v cell="$cell" '
        { if ($1 in first) print "GUEST: sample " cell " counter:" transfer ":" $1 " " run " " ($2 - first[$1]); else first[$1] = $2 }'
}

# bulk_sampled RUN SECONDS: one bulk download, its rate as a sample and the TCP counters over it and its close.
bulk_sampled() {
    local before after
    before=$(tcp_counters)
    /bin/tcpprobe bulk $server $port "$2" | while read -r _ _ mbit; do sample bulk_mbit "$1" "$mbit"; done
    wait_closed
    after=$(tcp_counters)
    counter_samples "bulk_${2}s" "$1" "$before" "$after"
}

# Waits (at most 10 s) until the router's queues are empty. A bulk run ends with the client closing while up to a
# queue of the server's segments still waits in the router, 2.2 s of them at 1 Mbit/s; the next run would share
# the link with them (linkcond drops a closed connection's queued bytes, so its runs never meet).
wait_drained() {
    local tries=0
    while [ $tries -lt 100 ]; do
        $tc -s -n rtr qdisc show | grep -q 'backlog [1-9]' || return 0
        sleep 0.1
        tries=$((tries + 1))
    done
}

# The packets the router's r0 has handed to c0 so far: veth counts a packet of several segments once, where the
# qdisc's counter counts its segments, so the two together say whether the router forwards segments or units.
router_skbs() { $ip -n rtr -s link show r0 | awk '/TX:/ { getline; print $2; exit }'; }

# bottleneck_counters DEV: what the router's qdisc on DEV sent and dropped (queue overflow and random loss).
bottleneck_counters() {
    $tc -s -n rtr qdisc show dev "$1" |
        sed -n 's/^ *Sent \([0-9]*\) bytes \([0-9]*\) pkt (dropped \([0-9]*\).*/\2 packets of \1 bytes, \3 dropped/p' | tail -1
}

# With UDP=1, a UDP flood through each shaped cell instead of the TCP probes: RUNS floods at each of UDP_LOADS
# times the rate, each into fresh qdiscs and a fresh sink, printed as "GUEST: udp RATE RTT LOSS LOAD METRIC RUN
# VALUE" (sent and received datagrams, the span of the arrivals), then the router's count of what it dropped.
if [ "${UDP:-0}" = 1 ]; then
    udp_port=5002
    while read -r rate rtt loss wire delay queue; do
        [ "$rate" != 0 ] || continue
        for load in $UDP_LOADS; do
            run=1
            while [ $run -le "$RUNS" ]; do
                unshape
                shape "$wire" "$delay" "$loss" netem
                rm -f /tmp/sink.out
                $ip netns exec srv /bin/tcpprobe sink $server $udp_port 1000 >/tmp/sink.out &
                sink_pid=$!
                tries=0
                while ! grep -q '^ready' /tmp/sink.out 2>/dev/null && [ $tries -lt 100 ]; do
                    sleep 0.05
                    tries=$((tries + 1))
                done
                kbits=$(awk -v r="$rate" -v l="$load" 'BEGIN { printf "%d", r * 1000 * l }')
                udp="GUEST: udp $rate $rtt $loss $load"
                /bin/tcpprobe flood $server $udp_port "$kbits" "$UDP_SECONDS" "$UDP_BYTES" |
                    while read -r _ sent; do echo "$udp sent $run $sent"; done
                wait $sink_pid
                awk -v udp="$udp" -v run=$run '$1 == "sink" { print udp, "received", run, $2; print udp, "span_ms", run, $4 }' \
                    /tmp/sink.out
                echo "GUEST: cell $rate $rtt $loss: load $load run $run: router uplink bottleneck (r1):" \
                    "$(bottleneck_counters r1)"
                run=$((run + 1))
            done
        done
    done </cells
    unshape
    echo "GUEST: done"
    exit 0
fi

while read -r rate rtt loss wire delay queue; do
    cell="$rate $rtt $loss"
    unshape
    bulk=$BULK_SECONDS
    if [ "$rate" = 0 ]; then
        bulk=$FLOOR_BULK_SECONDS
    else
        shape "$wire" "$delay" "$loss" netem
    fi
    echo "GUEST: cell $cell: $($tc -n rtr qdisc show dev r0 | tr '\n' ';') $($tc -n srv qdisc show dev s0 | tr '\n' ';')"
    skbs_before=$(router_skbs)
    # Unrecorded: the first connection of a cell also pays neighbour discovery and first-touch costs.
    /bin/tcpprobe fetch $server $port 10000 >/dev/null
    wait_closed
    ping_ms=$(ping -c 5 -i 0.2 -W 2 $server | sed -n 's|.*min/avg/max = [0-9.]*/\([0-9.]*\)/.*|\1|p')
    sample ping 1 "${ping_ms:-nan}"
    start_capture
    run=1
    while [ $run -le "$RUNS" ]; do
        for size in $FETCHES; do
            if [ "$size" != 1000000 ]; then fetch_sampled $run $size; continue; fi
            before=$(hystart_exits)
            fetch_sampled $run 1000000 "$IDLE_MS" "$IDLE_BYTES"
            echo "GUEST: cell $cell: run $run: 1 MB fetch: HyStart exits before $before, after $(hystart_exits)"
        done
        run=$((run + 1))
    done
    stop_capture
    run=1
    while [ $run -le "$BULK_RUNS" ]; do
        wait_drained
        bulk_sampled $run "$bulk"
        run=$((run + 1))
    done
    counters=$(bottleneck_counters r0)
    echo "GUEST: cell $cell: router downlink bottleneck (dropped: queue overflow and random loss): ${counters:-no counters};" \
        "$(( $(router_skbs) - skbs_before )) packets handed on to c0 (a packet of several segments counts once)"
done </cells

# Working latency: 1-byte pings on a second connection while a download fills the downlink's queue.
set -- $LATENCY_CELL
lrate=$1 lrtt=$2 lwire=$3 ldelay=$4 lqueue=$5
for qdisc in $LATENCY_QDISCS; do
    unshape
    queue=$lqueue
    case $qdisc in
        fifo) shape "$lwire" "$ldelay" 0 pfifo limit "$lqueue" ;;
        *) shape "$lwire" "$ldelay" 0 "$qdisc" ;;
    esac
    /bin/tcpprobe latency $server $port "$LATENCY_SECONDS" 100 | while read -r _ idle p50 p90 count mbit; do
        echo "GUEST: latency $qdisc $lrate $lrtt $idle $p50 $p90 $count $mbit"
    done
    echo "GUEST: latency $qdisc leaf: $($tc -s -n rtr qdisc show dev r0 | grep -A2 ' 10: ' | tr '\n' ' ' | tr -s ' ')"
done
unshape
echo "GUEST: done"
