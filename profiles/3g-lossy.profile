# Older NLC preset "3G Lossy".
# Numbers: NOTES.md section 1, older NLC presets (bandwidth in kbit/s, delay, loss, queue in packets).
# NLC's delay and loss apply to each direction, so unprefixed keys set both.
description = 3G Lossy (older Apple Network Link Conditioner preset)
downlink.bandwidth = 780 kbit/s
uplink.bandwidth = 330 kbit/s
delay = 100 ms
loss = 1 %
