package gc

// SetTestHooks sets the hooks tests use to act at a chosen moment of a
// run: after the mark, before each batch of deletes (an error there
// stops the run), and the batch size.
func SetTestHooks(o *Options, afterMark func(), beforeBatch func(n int) error, batchSize int) {
	o.afterMark, o.beforeBatch, o.batchSize = afterMark, beforeBatch, batchSize
}

// SetBeforeDelete sets a hook called after a batch's last check against
// the references and before its deletes: the window README.md's
// "Concurrency" describes.
func SetBeforeDelete(o *Options, f func()) { o.beforeDelete = f }
