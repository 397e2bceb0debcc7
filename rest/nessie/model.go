package nessie

import (
	"maps"
	"slices"
	"time"

	"github.com/floe-catalog/floe/versionstore"
)

// referenceJSON is Nessie's Reference: a Branch, Tag or Detached.
type referenceJSON struct {
	Type     string             `json:"type"`
	Name     string             `json:"name,omitempty"`
	Hash     string             `json:"hash,omitempty"`
	Metadata *referenceMetadata `json:"metadata,omitempty"`
}

// referenceMetadata is ReferenceMetadata, given with fetch=ALL.
type referenceMetadata struct {
	NumCommitsAhead    *int            `json:"numCommitsAhead,omitempty"`
	NumCommitsBehind   *int            `json:"numCommitsBehind,omitempty"`
	CommitMetaOfHEAD   *commitMetaJSON `json:"commitMetaOfHEAD,omitempty"`
	CommonAncestorHash string          `json:"commonAncestorHash,omitempty"`
	NumTotalCommits    *int64          `json:"numTotalCommits,omitempty"`
}

const (
	typeBranch   = "BRANCH"
	typeTag      = "TAG"
	typeDetached = "DETACHED"
)

func refJSON(r *versionstore.Ref) referenceJSON {
	return referenceJSON{Type: r.Type.String(), Name: r.Name, Hash: r.Head.String()}
}

// effectiveRef is the reference a read was answered from: the named
// reference at the resolved hash, or a detached hash.
func effectiveRef(res *versionstore.Resolved) referenceJSON {
	if res.Ref == nil {
		return referenceJSON{Type: typeDetached, Hash: res.Hash.String()}
	}
	return referenceJSON{Type: res.Ref.Type.String(), Name: res.Ref.Name, Hash: res.Hash.String()}
}

// commitMetaJSON is CommitMeta in its v2 form. author, signedOffBy and
// properties are the single-valued forms older clients read.
type commitMetaJSON struct {
	Hash               string              `json:"hash,omitempty"`
	Committer          string              `json:"committer,omitempty"`
	Author             string              `json:"author,omitempty"`
	Authors            []string            `json:"authors"`
	AllSignedOffBy     []string            `json:"allSignedOffBy"`
	Message            string              `json:"message"`
	CommitTime         *time.Time          `json:"commitTime,omitempty"`
	AuthorTime         *time.Time          `json:"authorTime,omitempty"`
	Properties         map[string]string   `json:"properties"`
	AllProperties      map[string][]string `json:"allProperties"`
	ParentCommitHashes []string            `json:"parentCommitHashes"`
}

// commitMetaIn is what a client may send as commitMeta. Committer and
// commit time are ignored: the server sets them.
type commitMetaIn struct {
	Author        string              `json:"author"`
	Authors       []string            `json:"authors"`
	Message       string              `json:"message"`
	AuthorTime    *time.Time          `json:"authorTime"`
	Properties    map[string]string   `json:"properties"`
	AllProperties map[string][]string `json:"allProperties"`
	SignedOffBy   string              `json:"signedOffBy"`
	AllSignedOff  []string            `json:"allSignedOffBy"`
}

func (m *commitMetaIn) meta() versionstore.CommitMeta {
	if m == nil {
		return versionstore.CommitMeta{}
	}
	out := versionstore.CommitMeta{Message: m.Message, Author: m.Author}
	if len(m.Authors) > 0 {
		out.Author = m.Authors[0]
	}
	if m.AuthorTime != nil {
		out.AuthorTime = *m.AuthorTime
	}
	props := map[string]string{}
	for k, vs := range m.AllProperties {
		if len(vs) > 0 {
			props[k] = vs[0]
		}
	}
	maps.Copy(props, m.Properties)
	if len(props) > 0 {
		out.Properties = props
	}
	return out
}

func commitMeta(c *versionstore.Commit) *commitMetaJSON {
	ct, at := c.CommitTime.UTC(), c.AuthorTime.UTC()
	m := &commitMetaJSON{
		Hash: c.Hash.String(), Committer: c.Committer, Author: c.Author,
		Authors: []string{}, AllSignedOffBy: []string{}, Message: c.Message,
		CommitTime: &ct, AuthorTime: &at,
		Properties: map[string]string{}, AllProperties: map[string][]string{},
		ParentCommitHashes: []string{},
	}
	if c.Author != "" {
		m.Authors = []string{c.Author}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Properties)) {
		m.Properties[k] = c.Properties[k]
		m.AllProperties[k] = []string{c.Properties[k]}
	}
	for _, p := range c.Parents {
		m.ParentCommitHashes = append(m.ParentCommitHashes, p.String())
	}
	return m
}

// contentJSON is Nessie's Content in the shapes floe stores: ICEBERG_TABLE,
// ICEBERG_VIEW and NAMESPACE. Pointers keep absent numbers absent.
type contentJSON struct {
	Type             string            `json:"type"`
	ID               string            `json:"id,omitempty"`
	MetadataLocation string            `json:"metadataLocation,omitempty"`
	SnapshotID       *int64            `json:"snapshotId,omitempty"`
	SchemaID         *int32            `json:"schemaId,omitempty"`
	SpecID           *int32            `json:"specId,omitempty"`
	SortOrderID      *int32            `json:"sortOrderId,omitempty"`
	VersionID        *int64            `json:"versionId,omitempty"`
	SQLText          string            `json:"sqlText,omitempty"`
	Dialect          string            `json:"dialect,omitempty"`
	Elements         []string          `json:"elements,omitempty"`
	Properties       map[string]string `json:"properties,omitempty"`
}

// toContentJSON renders stored content; key gives a namespace's elements.
func toContentJSON(key versionstore.ContentKey, c *versionstore.Content) *contentJSON {
	if c == nil {
		return nil
	}
	j := &contentJSON{Type: c.Type.String(), ID: c.ID}
	switch c.Type {
	case versionstore.Namespace:
		j.Elements = append([]string{}, key...)
		j.Properties = maps.Clone(c.Properties)
		if j.Properties == nil {
			j.Properties = map[string]string{}
		}
	case versionstore.IcebergTable:
		j.MetadataLocation = c.MetadataLocation
		j.SnapshotID, j.SchemaID, j.SpecID, j.SortOrderID = &c.SnapshotID, &c.SchemaID, &c.SpecID, &c.SortOrderID
	case versionstore.IcebergView:
		j.MetadataLocation = c.MetadataLocation
		j.VersionID, j.SchemaID = &c.VersionID, &c.SchemaID
	}
	return j
}

// content converts client content for key into stored content.
func (j *contentJSON) content(key versionstore.ContentKey) (*versionstore.Content, error) {
	if j == nil {
		return nil, badRequest("PUT of %q has no content", key.String())
	}
	c := &versionstore.Content{ID: j.ID}
	switch j.Type {
	case "NAMESPACE":
		c.Type = versionstore.Namespace
		if len(j.Elements) > 0 && !slices.Equal(j.Elements, key) {
			return nil, badRequest("namespace elements %q do not match its key %q", j.Elements, key.String())
		}
		if len(j.Properties) > 0 {
			c.Properties = maps.Clone(j.Properties)
		}
	case "ICEBERG_TABLE", "ICEBERG_VIEW":
		c.Type = versionstore.IcebergTable
		if j.Type == "ICEBERG_VIEW" {
			c.Type = versionstore.IcebergView
		}
		if j.MetadataLocation == "" {
			return nil, badRequest("%s content for %q needs a metadataLocation", j.Type, key.String())
		}
		c.MetadataLocation = j.MetadataLocation
		c.SnapshotID = deref(j.SnapshotID)
		c.SchemaID = deref(j.SchemaID)
		c.SpecID = deref(j.SpecID)
		c.SortOrderID = deref(j.SortOrderID)
		c.VersionID = deref(j.VersionID)
	case "":
		return nil, badRequest("content for %q has no type", key.String())
	default:
		return nil, badRequest("content type %s of %q is not supported; floe stores ICEBERG_TABLE, ICEBERG_VIEW and NAMESPACE", j.Type, key.String())
	}
	return c, nil
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}
