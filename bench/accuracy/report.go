package accuracy

import "time"

// Report is what TestAccuracy writes for cmd/report.
type Report struct {
	Seed       uint64         `json:"seed"`
	Limit      int            `json:"limit"`
	Window     time.Duration  `json:"window"`
	Contenders []Info         `json:"contenders"`
	Workloads  []WorkloadInfo `json:"workloads"`
	Results    []Result       `json:"results"`
	MultiRules []string       `json:"multi_rules"`
	Multi      []MultiResult  `json:"multi"`
}

// Info describes a contender.
type Info struct {
	Name  string `json:"name"`
	API   string `json:"api"`
	Algo  string `json:"algo"`
	Clock string `json:"clock"`
	Pacer bool   `json:"pacer"`
	Exact bool   `json:"exact"`
	Model string `json:"model"`
}

// WorkloadInfo describes a workload.
type WorkloadInfo struct {
	Name  string `json:"name"`
	About string `json:"about"`
	Calls int    `json:"calls"`
}

// Contenders is ours followed by the peers.
func Contenders() []Contender {
	cs := append(Ours(), References()...)
	return append(cs, Peers()...)
}
