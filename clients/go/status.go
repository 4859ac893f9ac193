package linkcond

// Status is the answer of GET /status. Raw holds the whole JSON object, for fields this version does not name.
type Status struct {
	Version                  string          `json:"version"`
	Profile                  string          `json:"profile"`
	ProfileSummary           string          `json:"profileSummary"`
	Offline                  string          `json:"offline,omitempty"` // "", "refuse" or "blackhole"
	Scenario                 *ScenarioStatus `json:"scenario,omitempty"`
	Listeners                []Listener      `json:"listeners"`
	MainLoopRealtimePriority *int            `json:"mainLoopRealtimePriority,omitempty"`
	Handshake                *Handshake      `json:"handshake,omitempty"`
	Raw                      map[string]any  `json:"-"`
}

// Handshake is the TCP handshake a new connection makes under the current conditions.
type Handshake struct {
	// RoundTripSeconds is the uplink's delay plus the downlink's: a SYN's trip and its SYN-ACK's.
	RoundTripSeconds float64 `json:"roundTripSeconds"`
	// Lossless is whether neither direction can lose a TCP packet.
	Lossless bool `json:"lossless"`
}

// ScenarioStatus is the scenario playing.
type ScenarioStatus struct {
	Name               string   `json:"name"`
	Step               *int     `json:"step,omitempty"`
	StepAppliedSeconds *float64 `json:"stepAppliedSeconds,omitempty"`
	ElapsedSeconds     float64  `json:"elapsedSeconds"`
	Repetitions        int      `json:"repetitions"`
	Finished           bool     `json:"finished"`
	// CurrentStep is the step in force as its author wrote it; nil before the first step.
	CurrentStep *string `json:"currentStep,omitempty"`
	// NextStep is the step due next as written; nil once a scenario that does not repeat applied its last step.
	NextStep *string `json:"nextStep,omitempty"`
	// SecondsToNextStep is the time until the next step applies; nil without a next step.
	SecondsToNextStep *float64 `json:"secondsToNextStep,omitempty"`
	// NextStepStartsOver is whether the next step starts the scenario over (repeat); nil without a next step.
	NextStepStartsOver *bool `json:"nextStepStartsOver,omitempty"`
}

// Listener is one listener's state: Kind is "tcp", "udp", "dns" or "proxy".
type Listener struct {
	Kind                string    `json:"kind"`
	Address             string    `json:"address"`
	Upstream            string    `json:"upstream,omitempty"`
	Toxiproxy           string    `json:"toxiproxy,omitempty"`
	ActiveConnections   int       `json:"activeConnections"`
	ConnectionsAccepted int       `json:"connectionsAccepted"`
	ConnectionsRefused  int       `json:"connectionsRefused"`
	ConnectionsExcluded int       `json:"connectionsExcluded"`
	MalformedMessages   int       `json:"malformedMessages"`
	Uplink              Direction `json:"uplink"`
	Downlink            Direction `json:"downlink"`
}

// Direction is one direction's counters; Downlink carries bytes from the upstream to the client.
type Direction struct {
	BytesDelivered           int     `json:"bytesDelivered"`
	QueuedBytes              int     `json:"queuedBytes"`
	InFlightBytes            int     `json:"inFlightBytes"`
	SegmentsLost             int     `json:"segmentsLost"`
	AcksLost                 int     `json:"acksLost"`
	HandshakeRetransmissions int     `json:"handshakeRetransmissions"`
	DatagramsDelivered       int     `json:"datagramsDelivered"`
	DatagramsDropped         int     `json:"datagramsDropped"`
	KernelDrops              int     `json:"kernelDrops"`
	FaultDrops               int     `json:"faultDrops"`
	Duplicates               int     `json:"duplicates"`
	DatagramsCorrupted       int     `json:"datagramsCorrupted,omitempty"`
	BitsPerSecond            float64 `json:"bitsPerSecond"`
	// BandwidthBitsPerSecond is the profile's rate for this direction now; nil when it sets none.
	BandwidthBitsPerSecond *float64  `json:"bandwidthBitsPerSecond,omitempty"`
	QueueDelaySeconds      *float64  `json:"queueDelaySeconds,omitempty"`
	DeliveryLateness       *Lateness `json:"deliveryLateness,omitempty"`
}

// Lateness is how much later than asked the emulated delays were delivered.
type Lateness struct {
	Writes     int     `json:"writes"`
	P50Seconds float64 `json:"p50Seconds"`
	P99Seconds float64 `json:"p99Seconds"`
	MaxSeconds float64 `json:"maxSeconds"`
	SumSeconds float64 `json:"sumSeconds"`
}
