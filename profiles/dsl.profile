# NLC "DSL".
# Numbers: NOTES.md section 1, Apple Network Link Conditioner (NLC); confidence: one copy only.
description = DSL (Apple Network Link Conditioner)
downlink.bandwidth = 2 Mbit/s
uplink.bandwidth = 256 kbit/s
delay = 5 ms
loss = 0 %
