import LinkProfiles

@testable import LinkModel

/// A profile with `down`/`up` rates and one-way delays, and `loss` on the downlink.
func linkProfile(down: BitRate?, up: BitRate?, downDelay: Duration, upDelay: Duration, loss: Double = 0) -> Profile {
    var profile = Profile.none
    profile.downlink = DirectionProfile(bandwidth: down, delay: downDelay, loss: Percentage(loss * 100))
    profile.uplink = DirectionProfile(bandwidth: up, delay: upDelay)
    return profile
}
