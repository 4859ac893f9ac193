# Older NLC preset "Edge Good".
# Numbers: NOTES.md section 1, older NLC presets (bandwidth in kbit/s, delay, loss, queue in packets).
# NLC's delay and loss apply to each direction, so unprefixed keys set both.
description = Edge Good (older Apple Network Link Conditioner preset)
downlink.bandwidth = 250 kbit/s
uplink.bandwidth = 200 kbit/s
delay = 350 ms
loss = 0 %   # none given
