package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTicks is the unit of the CPU times in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux architecture Go supports).
const clockTicks = 100

// CPUTime returns the CPU time (user and system) the cluster's running
// processes (etcd, kube-apiserver and, when started, the others) have used
// since they started, from /proc (Linux). A bench subtracts two readings to
// charge a span's work to the control plane rather than to its client.
func (c *Cluster) CPUTime() (time.Duration, error) {
	c.mu.Lock()
	pids := make(map[string]int, len(c.procs))
	for name, p := range c.procs {
		if p != nil && p.cmd.Process != nil {
			pids[name] = p.cmd.Process.Pid
		}
	}
	c.mu.Unlock()
	if len(pids) == 0 {
		return 0, fmt.Errorf("localcluster: cluster %s: no process running", c.Name)
	}
	var total time.Duration
	for name, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, fmt.Errorf("localcluster: cluster %s: cpu time of %s: %w", c.Name, name, err)
		}
		d, err := statCPU(b)
		if err != nil {
			return 0, fmt.Errorf("localcluster: cluster %s: cpu time of %s: %w", c.Name, name, err)
		}
		total += d
	}
	return total, nil
}

// statCPU reads utime and stime (fields 14 and 15) of a /proc/<pid>/stat
// line. The command name (field 2) is in parentheses and may hold spaces
// and parentheses itself: the fields are counted after its last ')'.
func statCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("no command name in /proc stat")
	}
	f := bytes.Fields(stat[i+1:])
	// f[0] is field 3 (state): utime is field 14, f[11]; stime f[12].
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	var ticks uint64
	for _, s := range f[11:13] {
		n, err := strconv.ParseUint(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
