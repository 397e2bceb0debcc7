// Package mergequeue is floe's merge queue: the single committer of each
// protected branch.
//
// It owns floe's merge queue: merge requests of a source ref into a target
// branch, their states and audit trail, and one worker per target branch
// that is the branch's single committer. A worker takes requests in arrival
// order (priority first, a request past the age limit first and alone),
// builds a candidate on an internal branch (named under CandidatePrefix) at
// the target's head by merging each request of the batch through the merge
// engine (package mergeengine, which classifies, cherry-picks and rebases
// Iceberg tables), validates each candidate commit with the Validator it was
// given, and moves the target to the candidate by compare-and-swap on the
// head it was built on, with every request's final record in the same
// durable write (versionstore's AssignRef with records). README.md describes
// the states and what the queue guarantees.
//
// State lives in version-store records (keys under "mergequeue/request/"),
// written by compare-and-swap; nothing is kept only in memory that a
// restart would need.
//
// Over a store shared by several replicas, a target's worker runs only
// while its replica holds the target's lease (package lease), and every
// landing write carries the lease's fence (worker.go: work, lead, adopt;
// land.go: land). README.md, "Where the code is", maps the files.
//
// The package may import versionstore, lease, mergeengine, classify,
// internal/apidoc (the documents it shares with the CLI) and refretention
// (its duration notation). It must not import net/http or any rest/
// package (checked by TestImports): floe's API calls it, never the other
// way round. The validation checks themselves live elsewhere and plug in
// through Validator.
package mergequeue
