// Package compose holds floe's Docker Compose files and the test that reads
// them.
//
// It holds the Docker Compose files of deploy/compose and the test that
// reads them: floe alone with its embedded store (single.yaml), and three
// floe replicas over PostgreSQL behind HAProxy with a PyIceberg client
// (replicas.yaml). It has no code; it must not import floe's packages, which
// it sees only as the image.
package compose
