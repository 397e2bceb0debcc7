package floeapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/floe-catalog/floe/internal/apidoc"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore/storebackup"
	"github.com/floe-catalog/floe/versionstore/storeexport"
)

// Actions of backups and exports: both copy the whole catalog, so both are
// admin actions.
const (
	ActionBackup policy.Action = "admin.backup"
	ActionExport policy.Action = "admin.export"
)

// Bodies and answers of the backup and export operations.
type (
	BackupRequest = apidoc.BackupRequest
	ExportRequest = apidoc.ExportRequest
)

// maxExportTime bounds how long an export may keep its request, past the
// server's write timeout (the answer is written only when the file is).
const maxExportTime = 6 * time.Hour

func (a *API) backupRoutes() []route {
	return []route{
		{http.MethodPost, "/admin/backup", a.backup},
		{http.MethodPost, "/admin/export", a.export},
	}
}

func (a *API) backup(r *http.Request) (any, error) {
	var req BackupRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if err := a.guard.Check(r, policy.Input{Action: ActionBackup}); err != nil {
		return nil, err
	}
	if a.backups == nil {
		return nil, notConfigured("backup of the embedded store")
	}
	if req.Dir == "" {
		return nil, badRequest("dir: want the absolute path of a new directory on the server's machine")
	}
	rep, err := a.backups.Backup(r.Context(), req.Dir)
	if err != nil {
		return nil, backupError(err)
	}
	a.logger.Info("store backed up", "dir", rep.Dir, "files", rep.Files, "bytes", rep.Bytes, "principal", a.principal(r))
	return rep, nil
}

func (a *API) export(r *http.Request) (any, error) {
	var req ExportRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if err := a.guard.Check(r, policy.Input{Action: ActionExport}); err != nil {
		return nil, err
	}
	if a.backups == nil {
		return nil, notConfigured("export of the embedded store")
	}
	if req.File == "" {
		return nil, badRequest("file: want the absolute path of a new file on the server's machine")
	}
	return &longRunning{timeout: maxExportTime, run: func() (any, error) {
		rep, err := a.backups.Export(r.Context(), req.File, storeexport.ExportOptions{Gzip: req.Gzip, Producer: "floe"})
		if err != nil {
			return nil, backupError(err)
		}
		a.logger.Info("store exported", "file", rep.File, "objects", rep.Objects, "bytes", rep.FileBytes, "principal", a.principal(r))
		return rep, nil
	}}, nil
}

func backupError(err error) error {
	switch {
	case errors.Is(err, storebackup.ErrNotAbsolute):
		return badRequest("%v", err)
	case errors.Is(err, storebackup.ErrExists):
		return conflict(nil, "%v", err)
	}
	return err
}
