package premis

// Queued reports how many appends wait for g's committer.
func Queued(g *GroupCommit) int { return len(g.reqs) }
