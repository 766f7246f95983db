package localcluster

// PIDs returns the process ids of c's running components by binary name
// (tests only).
func PIDs(c *Cluster) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := map[string]int{}
	for name, p := range c.procs {
		if !p.exited() {
			pids[name] = p.pid()
		}
	}
	return pids
}
