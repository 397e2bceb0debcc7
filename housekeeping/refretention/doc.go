// Package refretention expires branches and tags past their retention, by
// name prefix and own settings.
//
// It owns the retention of catalog references (branches and tags): each
// reference's own settings, kept as version-store records beside the
// reference (the store's reference format is unchanged), the per-prefix
// defaults of the server's configuration, the effective rule that follows
// from both, and the expiry sweep that deletes references past their maximum
// age through the store, so that every deletion lands in the reference log.
//
// A reference's retention has two parts. Its maximum age says when the
// reference itself expires: MaxAge after its last activity, which is its
// last commit or its creation, whichever is later (Iceberg's
// max-ref-age-ms, which is measured against the snapshot a ref points at,
// reads the same way). Its history retention (a commit count and an age)
// says how much of its history stays reachable for time travel and
// garbage collection; HistoryFor gives it to the garbage collector.
//
// `main`, references under a protected prefix, and tags without an
// expiry of their own never expire.
//
// The package sits above versionstore and below the APIs: it must not
// import net/http or anything under rest/, nor assemble.
package refretention
