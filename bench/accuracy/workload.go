package accuracy

import "github.com/slidelimit/slidelimit/internal/replay"

// The workloads are internal/replay's, shared with the Redis module's
// real-time replay.
type (
	Call     = replay.Call
	Workload = replay.Workload
)

// Seed, Limit and Window are the workloads' seed and configuration.
const (
	Seed   = replay.Seed
	Limit  = replay.Limit
	Window = replay.Window
)

// Workloads returns the replayed set.
func Workloads() []Workload { return replay.Workloads() }
