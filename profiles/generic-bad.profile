# Older NLC preset "Generic Bad".
# Numbers: NOTES.md section 1, older NLC presets (bandwidth in kbit/s, delay, loss, queue in packets).
# NLC's delay and loss apply to each direction, so unprefixed keys set both.
description = Generic Bad (older Apple Network Link Conditioner preset)
downlink.bandwidth = 95 kbit/s
uplink.bandwidth = 95 kbit/s
delay = 250 ms
loss = 2 %
queue = 100 packets
