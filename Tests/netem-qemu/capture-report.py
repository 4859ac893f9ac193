#!/usr/bin/env python3
"""What the guest's packet captures say about its small fetches (`compare.sh --capture`).

Each shaped cell's fetches are captured on the server's interface s0 (every segment it sent, the client's segments
that survived the router) and the client's c0 (the server's segments that survived, every segment it sent). A
first transmission is lost when no arrival of its sequence range follows it before the range is sent again; an
arrival is matched to the latest send before it.

The table: per cell, the fetches, the server's first transmissions of data lost (and per cent), the fetches that
lost a data segment before the last one (RACK then repairs it from the SACKs of what follows: a recovery), the
server's TCPSackRecovery over the same fetches (its counters), and the client's segments lost.

Usage: capture-report.py GUEST-LOG[.gz]    prints the table
Python 3 standard library only.
"""
import gzip
import sys
from collections import defaultdict

SERVER_PORT = 5001
MSS = 1448


def read(path):
    """The capture lines by cell, connection (the client's port) and interface, and the per-fetch counters."""
    opener = gzip.open if path.endswith(".gz") else open
    captures = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    recoveries = defaultdict(float)
    with opener(path, "rt") as log:
        for line in log:
            fields = line.split()
            if len(fields) > 7 and fields[1] == "sample" and fields[5] == "counter:fetch_10000:TCPSackRecovery":
                recoveries[" ".join(fields[2:5])] += float(fields[7])
            if len(fields) < 14 or fields[1] != "capture":
                continue
            cell, interface = " ".join(fields[2:5]), fields[5]
            at, direction, source, destination, seq, _, flags, length = fields[6:14]
            from_server = int(source) == SERVER_PORT
            port = destination if from_server else source
            captures[cell][port][interface].append(
                {"at": float(at), "out": direction == "out", "from_server": from_server, "seq": int(seq),
                 "flags": flags, "length": int(length)})
    return captures, recoveries


def first_sends_lost(sends, arrivals):
    """For each send of one sequence range, in order, whether it was lost: each arrival is matched to the latest
    unmatched send before it."""
    matched = [False] * len(sends)
    for at in sorted(arrivals):
        earlier = [index for index, sent in enumerate(sends) if not matched[index] and sent < at]
        if earlier:
            matched[earlier[-1]] = True
    return [not arrived for arrived in matched]


def connection_losses(connection):
    """The flight positions (0 for the first data segment) of the data segments whose first send was lost, and how
    many segments the client sent and lost."""
    server = connection["s0"]
    client = connection["c0"]
    sent = [p for p in server if p["from_server"] and p["out"]]
    syn = [p for p in sent if "S" in p["flags"]]
    if not syn:
        return None
    isn = syn[0]["seq"]
    sends, arrivals = defaultdict(list), defaultdict(list)
    for packet in sent:
        if packet["length"] > 0:
            sends[packet["seq"]].append(packet["at"])
    for packet in client:
        if packet["from_server"] and not packet["out"] and packet["length"] > 0:
            arrivals[packet["seq"]].append(packet["at"])
    lost = sorted((seq - isn - 1) // MSS for seq, times in sends.items() if first_sends_lost(times, arrivals[seq])[0])
    client_sent = sum(1 for p in client if not p["from_server"] and p["out"])
    client_arrived = sum(1 for p in server if not p["from_server"] and not p["out"])
    return lost, len(sends), client_sent, client_sent - client_arrived


def table(path):
    captures, recoveries = read(path)
    lines = ["| Mbit/s | RTT ms | loss % | fetches | data segments lost | fetches losing one before the last "
             "| TCPSackRecovery | client's segments lost |",
             "|---|---|---|---|---|---|---|---|"]
    for cell, connections in captures.items():
        fetches = segments = lost = early = client_sent = client_lost = 0
        for connection in connections.values():
            found = connection_losses(connection)
            if found is None:
                continue
            positions, sent, sent_by_client, lost_by_client = found
            last = sent - 1
            fetches += 1
            segments += sent
            lost += len(positions)
            early += any(position < last for position in positions)
            client_sent += sent_by_client
            client_lost += lost_by_client
        rate, rtt, loss = cell.split()
        lines.append(f"| {rate} | {rtt} | {loss} | {fetches} | {lost} of {segments} ({100 * lost / segments:.1f} %) "
                     f"| {early} | {recoveries[cell]:.0f} | {client_lost} of {client_sent} "
                     f"({100 * client_lost / max(client_sent, 1):.1f} %) |")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(table(sys.argv[1]))
