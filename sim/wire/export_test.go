package wire

// SetSyncHook runs f before every fsync of a journal's log, until the
// returned restore is called: a test blocks fsyncs with it.
func SetSyncHook(f func()) (restore func()) {
	syncHook = f
	return func() { syncHook = nil }
}

// JournalSyncs is how many times j fsynced its log.
func JournalSyncs(j *Journal) int64 { return j.syncs.Load() }
