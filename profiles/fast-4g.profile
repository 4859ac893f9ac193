# Chrome DevTools "Fast 4G".
# Numbers: NOTES.md section 1, Chrome DevTools presets as shipped.
# DevTools throttles whole requests, so its numbers already include its adjustment factors
# (round-trip latency x 3.75, throughput x 0.9 for "Fast 3G"); they are used here unchanged.
# DevTools gives one round-trip latency; a per-direction model takes half of it each way.
description = Fast 4G (Chrome DevTools)
downlink.bandwidth = 8.1 Mbit/s
uplink.bandwidth = 1.35 Mbit/s
delay = 82.5 ms   # half of 165 ms round trip
loss = 0 %
