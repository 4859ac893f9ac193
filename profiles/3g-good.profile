# Older NLC preset "3G Good".
# Numbers: NOTES.md section 1, older NLC presets (bandwidth in kbit/s, delay, loss, queue in packets).
# NLC's delay and loss apply to each direction, so unprefixed keys set both.
description = 3G Good (older Apple Network Link Conditioner preset)
downlink.bandwidth = 850 kbit/s
uplink.bandwidth = 420 kbit/s
delay = 90 ms
loss = 0 %
