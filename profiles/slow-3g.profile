# Chrome DevTools "Slow 3G".
# Numbers: NOTES.md section 1, Chrome DevTools presets as shipped.
# DevTools throttles whole requests, so its numbers already include its adjustment factors
# (round-trip latency x 3.75, throughput x 0.9 for "Fast 3G"); they are used here unchanged.
# DevTools gives one round-trip latency; a per-direction model takes half of it each way.
description = Slow 3G (Chrome DevTools)
bandwidth = 400 kbit/s
delay = 1000 ms   # half of 2000 ms round trip
loss = 0 %
