/// The texts of the profiles shipped in `profiles/`, built into the library so the binary works from any directory.
///
/// Copied by hand from the files, in listing order: NLC's current set, its older presets, browser presets.
/// `BuiltInProfileTests` fails if a copy and its file differ by a byte, or if either has no counterpart.
enum BuiltInProfileTexts {
    static let all: [(name: String, text: String)] = [
        (
            "none",
            #"""
            # No impairment: traffic passes as if linkcond were not there.
            description = No impairment

            """#
        ),
        (
            "100-loss",
            #"""
            # NLC "100% Loss": every packet is dropped in both directions.
            # Numbers: NOTES.md section 1, Apple Network Link Conditioner (NLC); confidence: by definition.
            # Bandwidth and delay are left unlimited and zero: nothing gets through anyway.
            description = 100% Loss (Apple Network Link Conditioner)
            loss = 100 %

            """#
        ),
        (
            "3g",
            #"""
            # NLC "3G".
            # Numbers: NOTES.md section 1, Apple Network Link Conditioner (NLC); confidence: two independent copies agree.
            description = 3G (Apple Network Link Conditioner)
            downlink.bandwidth = 780 kbit/s
            uplink.bandwidth = 330 kbit/s
            delay = 100 ms
            loss = 0 %

            """#
        ),
        (
            "dsl",
            #"""
            # NLC "DSL".
            # Numbers: NOTES.md section 1, Apple Network Link Conditioner (NLC); confidence: one copy only.
            description = DSL (Apple Network Link Conditioner)
            downlink.bandwidth = 2 Mbit/s
            uplink.bandwidth = 256 kbit/s
            delay = 5 ms
            loss = 0 %

            """#
        ),
        (
            "edge",
            #"""
            # NLC "Edge".
            # Numbers: NOTES.md section 1, Apple Network Link Conditioner (NLC).
            # Doubt: the 400 ms downlink delay comes from one copy; the 440 ms uplink delay is inferred, not seen.
            description = Edge (Apple Network Link Conditioner)
            downlink.bandwidth = 240 kbit/s
            uplink.bandwidth = 200 kbit/s
            downlink.delay = 400 ms
            uplink.delay = 440 ms   # inferred
            loss = 0 %

            """#
        ),
        (
            "high-latency-dns",
            #"""
            # NLC "High Latency DNS": links unshaped, but every DNS lookup waits 3 s.
            # Numbers: NOTES.md section 1, Apple Network Link Conditioner (NLC); confidence: one copy only.
            # NLC applies DNS delay to UDP port 53 as its own rule.
            description = High Latency DNS (Apple Network Link Conditioner)
            bandwidth = unlimited
            delay = 0 ms
            loss = 0 %
            dns.delay = 3000 ms

            """#
        ),
        (
            "lte",
            #"""
            # NLC "LTE".
            # Numbers: NOTES.md section 1, Apple Network Link Conditioner (NLC).
            # Doubt: the 65 ms uplink delay is unverified.
            description = LTE (Apple Network Link Conditioner)
            downlink.bandwidth = 50 Mbit/s
            uplink.bandwidth = 10 Mbit/s
            downlink.delay = 50 ms
            uplink.delay = 65 ms   # unverified
            loss = 0 %

            """#
        ),
        (
            "very-bad-network",
            #"""
            # NLC "Very Bad Network".
            # Numbers: NOTES.md section 1, Apple Network Link Conditioner (NLC).
            # Doubt: loss and delay are unverified; some copies give 5 % or 20 % loss instead of 10 %.
            description = Very Bad Network (Apple Network Link Conditioner)
            bandwidth = 1 Mbit/s
            delay = 500 ms   # unverified
            loss = 10 %      # unverified: 5 % or 20 % in some copies

            """#
        ),
        (
            "wifi",
            #"""
            # NLC "Wi-Fi".
            # Numbers: NOTES.md section 1, Apple Network Link Conditioner (NLC); confidence: one copy only.
            description = Wi-Fi (Apple Network Link Conditioner)
            downlink.bandwidth = 40 Mbit/s
            uplink.bandwidth = 33 Mbit/s
            delay = 1 ms
            loss = 0 %

            """#
        ),
        (
            "wifi-802.11ac",
            #"""
            # NLC "Wi-Fi 802.11ac".
            # Numbers: NOTES.md section 1, Apple Network Link Conditioner (NLC).
            # Doubt: the 1 ms delay is unverified.
            description = Wi-Fi 802.11ac (Apple Network Link Conditioner)
            downlink.bandwidth = 250 Mbit/s
            uplink.bandwidth = 100 Mbit/s
            delay = 1 ms   # unverified
            loss = 0 %

            """#
        ),
        (
            "generic-bad",
            #"""
            # Older NLC preset "Generic Bad".
            # Numbers: NOTES.md section 1, older NLC presets (bandwidth in kbit/s, delay, loss, queue in packets).
            # NLC's delay and loss apply to each direction, so unprefixed keys set both.
            description = Generic Bad (older Apple Network Link Conditioner preset)
            downlink.bandwidth = 95 kbit/s
            uplink.bandwidth = 95 kbit/s
            delay = 250 ms
            loss = 2 %
            queue = 100 packets

            """#
        ),
        (
            "generic-average",
            #"""
            # Older NLC preset "Generic Average".
            # Numbers: NOTES.md section 1, older NLC presets (bandwidth in kbit/s, delay, loss, queue in packets).
            # NLC's delay and loss apply to each direction, so unprefixed keys set both.
            description = Generic Average (older Apple Network Link Conditioner preset)
            downlink.bandwidth = 375 kbit/s
            uplink.bandwidth = 375 kbit/s
            delay = 145 ms
            loss = 0.1 %
            queue = 100 packets

            """#
        ),
        (
            "generic-good",
            #"""
            # Older NLC preset "Generic Good".
            # Numbers: NOTES.md section 1, older NLC presets (bandwidth in kbit/s, delay, loss, queue in packets).
            # NLC's delay and loss apply to each direction, so unprefixed keys set both.
            description = Generic Good (older Apple Network Link Conditioner preset)
            downlink.bandwidth = 1000 kbit/s
            uplink.bandwidth = 1000 kbit/s
            delay = 35 ms
            loss = 0 %
            queue = 100 packets

            """#
        ),
        (
            "3g-good",
            #"""
            # Older NLC preset "3G Good".
            # Numbers: NOTES.md section 1, older NLC presets (bandwidth in kbit/s, delay, loss, queue in packets).
            # NLC's delay and loss apply to each direction, so unprefixed keys set both.
            description = 3G Good (older Apple Network Link Conditioner preset)
            downlink.bandwidth = 850 kbit/s
            uplink.bandwidth = 420 kbit/s
            delay = 90 ms
            loss = 0 %

            """#
        ),
        (
            "3g-lossy",
            #"""
            # Older NLC preset "3G Lossy".
            # Numbers: NOTES.md section 1, older NLC presets (bandwidth in kbit/s, delay, loss, queue in packets).
            # NLC's delay and loss apply to each direction, so unprefixed keys set both.
            description = 3G Lossy (older Apple Network Link Conditioner preset)
            downlink.bandwidth = 780 kbit/s
            uplink.bandwidth = 330 kbit/s
            delay = 100 ms
            loss = 1 %

            """#
        ),
        (
            "cable",
            #"""
            # Older NLC preset "Cable".
            # Numbers: NOTES.md section 1, older NLC presets (bandwidth in kbit/s, delay, loss, queue in packets).
            # NLC's delay and loss apply to each direction, so unprefixed keys set both.
            description = Cable (older Apple Network Link Conditioner preset)
            downlink.bandwidth = 6000 kbit/s
            uplink.bandwidth = 1000 kbit/s
            delay = 2 ms
            loss = 0 %
            queue = 10 packets

            """#
        ),
        (
            "edge-good",
            #"""
            # Older NLC preset "Edge Good".
            # Numbers: NOTES.md section 1, older NLC presets (bandwidth in kbit/s, delay, loss, queue in packets).
            # NLC's delay and loss apply to each direction, so unprefixed keys set both.
            description = Edge Good (older Apple Network Link Conditioner preset)
            downlink.bandwidth = 250 kbit/s
            uplink.bandwidth = 200 kbit/s
            delay = 350 ms
            loss = 0 %   # none given

            """#
        ),
        (
            "edge-lossy",
            #"""
            # Older NLC preset "Edge Lossy".
            # Numbers: NOTES.md section 1, older NLC presets (bandwidth in kbit/s, delay, loss, queue in packets).
            # NLC's delay and loss apply to each direction, so unprefixed keys set both.
            description = Edge Lossy (older Apple Network Link Conditioner preset)
            downlink.bandwidth = 240 kbit/s
            uplink.bandwidth = 200 kbit/s
            delay = 400 ms
            loss = 1 %

            """#
        ),
        (
            "wifi-good",
            #"""
            # Older NLC preset "Wi-Fi Good".
            # Numbers: NOTES.md section 1, older NLC presets (bandwidth in kbit/s, delay, loss, queue in packets).
            # NLC's delay and loss apply to each direction, so unprefixed keys set both.
            description = Wi-Fi Good (older Apple Network Link Conditioner preset)
            downlink.bandwidth = 45000 kbit/s
            uplink.bandwidth = 40000 kbit/s
            delay = 1 ms
            loss = 0 %   # none given

            """#
        ),
        (
            "slow-3g",
            #"""
            # Chrome DevTools "Slow 3G".
            # Numbers: NOTES.md section 1, Chrome DevTools presets as shipped.
            # DevTools throttles whole requests, so its numbers already include its adjustment factors
            # (round-trip latency x 3.75, throughput x 0.9 for "Fast 3G"); they are used here unchanged.
            # DevTools gives one round-trip latency; a per-direction model takes half of it each way.
            description = Slow 3G (Chrome DevTools)
            bandwidth = 400 kbit/s
            delay = 1000 ms   # half of 2000 ms round trip
            loss = 0 %

            """#
        ),
        (
            "fast-3g",
            #"""
            # Chrome DevTools "Fast 3G" (labelled "Slow 4G" in newer versions).
            # Numbers: NOTES.md section 1, Chrome DevTools presets as shipped.
            # DevTools throttles whole requests, so its numbers already include its adjustment factors
            # (round-trip latency x 3.75, throughput x 0.9 for "Fast 3G"); they are used here unchanged.
            # DevTools gives one round-trip latency; a per-direction model takes half of it each way.
            description = Fast 3G (Chrome DevTools)
            downlink.bandwidth = 1.44 Mbit/s
            uplink.bandwidth = 675 kbit/s
            delay = 281.25 ms   # half of 562.5 ms round trip
            loss = 0 %

            """#
        ),
        (
            "fast-4g",
            #"""
            # Chrome DevTools "Fast 4G".
            # Numbers: NOTES.md section 1, Chrome DevTools presets as shipped.
            # DevTools throttles whole requests, so its numbers already include its adjustment factors
            # (round-trip latency x 3.75, throughput x 0.9 for "Fast 3G"); they are used here unchanged.
            # DevTools gives one round-trip latency; a per-direction model takes half of it each way.
            description = Fast 4G (Chrome DevTools)
            downlink.bandwidth = 8.1 Mbit/s
            uplink.bandwidth = 1.35 Mbit/s
            delay = 82.5 ms   # half of 165 ms round trip
            loss = 0 %

            """#
        ),
    ]
}
