# NLC "3G".
# Numbers: NOTES.md section 1, Apple Network Link Conditioner (NLC); confidence: two independent copies agree.
description = 3G (Apple Network Link Conditioner)
downlink.bandwidth = 780 kbit/s
uplink.bandwidth = 330 kbit/s
delay = 100 ms
loss = 0 %
