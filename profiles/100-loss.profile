# NLC "100% Loss": every packet is dropped in both directions.
# Numbers: NOTES.md section 1, Apple Network Link Conditioner (NLC); confidence: by definition.
# Bandwidth and delay are left unlimited and zero: nothing gets through anyway.
description = 100% Loss (Apple Network Link Conditioner)
loss = 100 %
