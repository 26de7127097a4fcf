package premis

// Queued reports how many appends wait for g's committer.
func Queued(g *GroupCommit) int { return len(g.reqs) }

// QueuedLookups reports how many lookups wait for g's looker.
func QueuedLookups(g *GroupCommit) int { return len(g.looks) }
