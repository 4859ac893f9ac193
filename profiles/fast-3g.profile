# Chrome DevTools "Fast 3G" (labelled "Slow 4G" in newer versions).
# Numbers: NOTES.md section 1, Chrome DevTools presets as shipped.
# DevTools throttles whole requests, so its numbers already include its adjustment factors
# (round-trip latency x 3.75, throughput x 0.9 for "Fast 3G"); they are used here unchanged.
# DevTools gives one round-trip latency; a per-direction model takes half of it each way.
description = Fast 3G (Chrome DevTools)
downlink.bandwidth = 1.44 Mbit/s
uplink.bandwidth = 675 kbit/s
delay = 281.25 ms   # half of 562.5 ms round trip
loss = 0 %
