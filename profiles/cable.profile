# Older NLC preset "Cable".
# Numbers: NOTES.md section 1, older NLC presets (bandwidth in kbit/s, delay, loss, queue in packets).
# NLC's delay and loss apply to each direction, so unprefixed keys set both.
description = Cable (older Apple Network Link Conditioner preset)
downlink.bandwidth = 6000 kbit/s
uplink.bandwidth = 1000 kbit/s
delay = 2 ms
loss = 0 %
queue = 10 packets
