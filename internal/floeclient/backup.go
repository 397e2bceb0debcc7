package floeclient

import (
	"context"
	"net/http"

	"github.com/floe-catalog/floe/internal/apidoc"
)

// Backup asks the server to write a backup of its store into dir, a new
// directory on the server's machine (POST /admin/backup).
func (c *Client) Backup(ctx context.Context, dir string) (*apidoc.BackupReport, error) {
	var rep apidoc.BackupReport
	if err := c.Do(ctx, http.MethodPost, "/admin/backup", nil, apidoc.BackupRequest{Dir: dir}, &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}

// Export asks the server to export its store's whole history to file, a
// new file on the server's machine (POST /admin/export). The answer comes
// when the file is complete: give the client a timeout to match.
func (c *Client) Export(ctx context.Context, file string, gzip bool) (*apidoc.ExportReport, error) {
	var rep apidoc.ExportReport
	if err := c.Do(ctx, http.MethodPost, "/admin/export", nil, apidoc.ExportRequest{File: file, Gzip: gzip}, &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}
