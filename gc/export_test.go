package gc

// SetTestHooks sets the hooks tests use to act at a chosen moment of a
// run: after the mark, before each batch of deletes (an error there
// stops the run), and the batch size.
func SetTestHooks(o *Options, afterMark func(), beforeBatch func(n int) error, batchSize int) {
	o.afterMark, o.beforeBatch, o.batchSize = afterMark, beforeBatch, batchSize
}
