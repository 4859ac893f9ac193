# NLC "Wi-Fi".
# Numbers: NOTES.md section 1, Apple Network Link Conditioner (NLC); confidence: one copy only.
description = Wi-Fi (Apple Network Link Conditioner)
downlink.bandwidth = 40 Mbit/s
uplink.bandwidth = 33 Mbit/s
delay = 1 ms
loss = 0 %
