// Package replicas tests floe as several stateless replicas over one
// PostgreSQL database.
//
// It tests floe run as several stateless replicas over one PostgreSQL
// database (versionstore/pgbackend): three servers on loopback ports sharing
// a store and a warehouse, driven by iceberg-go clients spread across them.
// It holds tests only.
//
// It may import anything (it sits above the whole server); nothing may
// import it.
package replicas
