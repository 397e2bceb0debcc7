// Package s3vend vends engines short-lived S3 credentials for one table, never able to delete.
//
// The credentials come from STS AssumeRole, narrowed by an inline session
// policy to the table's key prefixes.
//
// It owns what a grant is (Grant: a table's prefixes, read-only or
// read-write), the session policy that says it to S3 (Grant.SessionPolicy:
// GetObject and a prefix-bound ListBucket, PutObject for writers, and an
// explicit deny of every deletion and of multipart aborts), the decision
// between no access, read-only and read-write (Decide, which asks the
// policy engine the storage.read and storage.write questions remote signing
// asks), and the call to STS with a cache of what it answered (Vendor).
// Which table a request names, and the HTTP answer, are the Iceberg REST
// facade's.
//
// It must not import the HTTP APIs (rest/...), the version store or
// net/http itself (the AWS SDK does).
package s3vend
