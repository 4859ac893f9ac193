# Older NLC preset "Wi-Fi Good".
# Numbers: NOTES.md section 1, older NLC presets (bandwidth in kbit/s, delay, loss, queue in packets).
# NLC's delay and loss apply to each direction, so unprefixed keys set both.
description = Wi-Fi Good (older Apple Network Link Conditioner preset)
downlink.bandwidth = 45000 kbit/s
uplink.bandwidth = 40000 kbit/s
delay = 1 ms
loss = 0 %   # none given
