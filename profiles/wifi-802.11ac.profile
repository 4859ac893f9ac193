# NLC "Wi-Fi 802.11ac".
# Numbers: NOTES.md section 1, Apple Network Link Conditioner (NLC).
# Doubt: the 1 ms delay is unverified.
description = Wi-Fi 802.11ac (Apple Network Link Conditioner)
downlink.bandwidth = 250 Mbit/s
uplink.bandwidth = 100 Mbit/s
delay = 1 ms   # unverified
loss = 0 %
