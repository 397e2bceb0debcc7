// Command image assembles floe's container image as an OCI layout, without a
// container daemon.
//
// It assembles floe's container image as an OCI image layout without a
// container daemon: the static floe binary and the few files
// deploy/Dockerfile copies, in one layer on an empty base, with the user,
// entrypoint, environment, volumes, labels and healthcheck that the
// Dockerfile declares. Its test parses the Dockerfile and checks the two
// agree, then inspects the layout it writes.
//
//	go run ./deploy/image -out bin/floe-oci
//
// writes the layout (copy it into a daemon or registry with skopeo or
// crane: oci:bin/floe-oci). It owns no floe code and must not import
// floe's packages: it sees floe only as the binary it packs.
package main
