# Older NLC preset "Generic Average".
# Numbers: NOTES.md section 1, older NLC presets (bandwidth in kbit/s, delay, loss, queue in packets).
# NLC's delay and loss apply to each direction, so unprefixed keys set both.
description = Generic Average (older Apple Network Link Conditioner preset)
downlink.bandwidth = 375 kbit/s
uplink.bandwidth = 375 kbit/s
delay = 145 ms
loss = 0.1 %
queue = 100 packets
