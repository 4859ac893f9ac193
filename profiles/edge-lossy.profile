# Older NLC preset "Edge Lossy".
# Numbers: NOTES.md section 1, older NLC presets (bandwidth in kbit/s, delay, loss, queue in packets).
# NLC's delay and loss apply to each direction, so unprefixed keys set both.
description = Edge Lossy (older Apple Network Link Conditioner preset)
downlink.bandwidth = 240 kbit/s
uplink.bandwidth = 200 kbit/s
delay = 400 ms
loss = 1 %
