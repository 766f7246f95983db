//go:build !unix

package localcluster

import "errors"

// FreezeAPIServer is not supported off Unix (it needs SIGSTOP).
func (c *Cluster) FreezeAPIServer() (thaw func(), err error) {
	return nil, errors.New("localcluster: freezing kube-apiserver needs SIGSTOP (Unix)")
}
