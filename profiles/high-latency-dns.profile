# NLC "High Latency DNS": links unshaped, but every DNS lookup waits 3 s.
# Numbers: NOTES.md section 1, Apple Network Link Conditioner (NLC); confidence: one copy only.
# NLC applies DNS delay to UDP port 53 as its own rule.
description = High Latency DNS (Apple Network Link Conditioner)
bandwidth = unlimited
delay = 0 ms
loss = 0 %
dns.delay = 3000 ms
