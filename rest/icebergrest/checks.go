package icebergrest

import (
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
)

// The catalog's checks of what clients send (package catalog: validate.go,
// sharedfiles.go, limits.go, requirements.go), as the facade's own
// handlers (creates, views, namespaces, identifiers) run them; their
// refusals are catalog.Errors, answered by classify.

// updateFields are the checked fields of an update (catalog.UpdateFields).
type updateFields = catalog.UpdateFields

// validateCreateTable checks a createTable request: its location and schema.
func validateCreateTable(req *createTableRequest) error {
	return catalog.ValidateCreateTable(req.Location, req.Properties[icebergtable.PropMetadataPath], req.Schema)
}

func validateCreateView(location string, schema *iceberg.Schema) error {
	return catalog.ValidateCreateView(location, schema)
}

func validateViewUpdates(updates view.Updates) error { return catalog.ValidateViewUpdates(updates) }

func validateTableLayouts(base, next table.Metadata) error {
	return catalog.ValidateTableLayouts(base, next)
}

func checkCreateProperties(id identifier, props map[string]string) error {
	return catalog.CheckCreateProperties(catalog.Identifier(id), props)
}

func withSharedFileProperties(props map[string]string) map[string]string {
	return catalog.WithSharedFileProperties(props)
}

func checkNewKey(what string, key versionstore.ContentKey) error {
	return catalog.CheckNewKey(what, key)
}

func checkObjectName(name string) error { return catalog.CheckObjectName(name) }

func viewRequirementFailed(rq view.Requirement, base view.Metadata, err error) error {
	return catalog.ViewRequirementFailed(rq, base, err)
}
