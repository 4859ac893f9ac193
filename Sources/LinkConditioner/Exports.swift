// The Swift API is `import LinkConditioner` alone: its signatures use the lower layers' types (a profile's
// `DirectionShape`, `Instant`, the units), so this module re-exports those layers.
@_exported import LinkModel
@_exported import LinkProfiles
@_exported import LinkSystem
