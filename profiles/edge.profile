# NLC "Edge".
# Numbers: NOTES.md section 1, Apple Network Link Conditioner (NLC).
# Doubt: the 400 ms downlink delay comes from one copy; the 440 ms uplink delay is inferred, not seen.
description = Edge (Apple Network Link Conditioner)
downlink.bandwidth = 240 kbit/s
uplink.bandwidth = 200 kbit/s
downlink.delay = 400 ms
uplink.delay = 440 ms   # inferred
loss = 0 %
