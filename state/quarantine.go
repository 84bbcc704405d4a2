package state

import "time"

// Quarantine stages: where a record failed.
const (
	// StageList: a part of the listing (a folder, a CSV table) could not
	// be listed; Key is its prefix ("guides/", "tariff:").
	StageList = "list"
	// StageRead: the source could not read the record (unreadable, too
	// large, not text, a malformed row).
	StageRead = "read"
	// StageParse: the record could not be parsed or mapped (too complex,
	// an invalid document).
	StageParse = "parse"
	// StageEmbed: the embedding provider refused the record's texts.
	StageEmbed = "embed"
)

// Quarantined is a record a run could not read, parse or embed. Its last
// good version stays in state and the graph; the record is retried on
// every run until one writes it, reads it cleanly or deletes it.
type Quarantined struct {
	Pipeline string `json:"pipeline"`
	Source   string `json:"source"`
	// Key is the record key, or for StageList the prefix of the keys the
	// failed part of the listing holds.
	Key   string `json:"quarantined"`
	Stage string `json:"stage"`
	// Error says why, naming the file, row or field.
	Error string `json:"error"`
	// FirstAt is when the record was first quarantined, LastAt when last,
	// Attempts how many runs failed on it since FirstAt, RunID the last
	// such run.
	FirstAt  time.Time `json:"first_at"`
	LastAt   time.Time `json:"last_at"`
	Attempts int       `json:"attempts"`
	RunID    int64     `json:"run_id"`
}
