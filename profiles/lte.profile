# NLC "LTE".
# Numbers: NOTES.md section 1, Apple Network Link Conditioner (NLC).
# Doubt: the 65 ms uplink delay is unverified.
description = LTE (Apple Network Link Conditioner)
downlink.bandwidth = 50 Mbit/s
uplink.bandwidth = 10 Mbit/s
downlink.delay = 50 ms
uplink.delay = 65 ms   # unverified
loss = 0 %
