# NLC "Very Bad Network".
# Numbers: NOTES.md section 1, Apple Network Link Conditioner (NLC).
# Doubt: loss and delay are unverified; some copies give 5 % or 20 % loss instead of 10 %.
description = Very Bad Network (Apple Network Link Conditioner)
bandwidth = 1 Mbit/s
delay = 500 ms   # unverified
loss = 10 %      # unverified: 5 % or 20 % in some copies
