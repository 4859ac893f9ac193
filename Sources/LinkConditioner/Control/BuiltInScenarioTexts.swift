/// The scenarios shipped in profiles/*.scenario, built in so the binary works from any directory.
///
/// Kept byte-identical to the files; a test checks both ways.
enum BuiltInScenarioTexts {
    static let all: [(name: String, text: String)] = [
        (
            "flapping-link",
            #"""
            # A flapping link: up for eight seconds, down for two, forever.
            0s    dsl
            8s    offline
            10s   repeat
            """#
        ),
        (
            "leaving-wifi",
            #"""
            # Walking out of Wi-Fi range: the signal fades, the phone clings on, then falls back to 3G.
            0s    wifi
            10s   ramp downlink.bandwidth from 40 Mbit/s to 1 Mbit/s over 20s
            10s   ramp uplink.bandwidth from 33 Mbit/s to 500 kbit/s over 20s
            30s   set delay = 200 ms; loss = 5 %
            40s   offline
            45s   3g
            """#
        ),
        (
            "subway",
            #"""
            # A subway ride: good LTE between stations, nothing in the tunnels, Edge while the train crawls out.
            0s    lte
            30s   offline blackhole
            40s   edge
            55s   3g
            70s   lte
            90s   repeat
            """#
        ),
    ]
}
