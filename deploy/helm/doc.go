// Package helm holds floe's Helm chart and the test that lints and renders
// it.
//
// It holds floe's Helm chart (deploy/helm/floe) and the test that lints it,
// renders both of its modes with helm and checks the wiring of the
// manifests. The test builds helm from the Go module proxy at a pinned
// version into .cache/ the first time. It has no code and must not import
// floe's packages.
package helm
