# Older NLC preset "Generic Good".
# Numbers: NOTES.md section 1, older NLC presets (bandwidth in kbit/s, delay, loss, queue in packets).
# NLC's delay and loss apply to each direction, so unprefixed keys set both.
description = Generic Good (older Apple Network Link Conditioner preset)
downlink.bandwidth = 1000 kbit/s
uplink.bandwidth = 1000 kbit/s
delay = 35 ms
loss = 0 %
queue = 100 packets
