package clusters

import (
	"context"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// ForbiddenAddr says why an untrusted kubeconfig may not send the hub to ip
// ("link-local", ...), or "" when it may. Forbidden: link-local addresses
// (169.254.0.0/16, fe80::/10: the cloud metadata endpoint 169.254.169.254
// among them), unspecified ones (0.0.0.0/8, ::: 0.0.0.0 reaches the host
// itself), multicast, and the cloud metadata endpoints that are not
// link-local (fd00:ec2::254, 100.100.100.200). Loopback and private
// addresses are allowed: management clusters on one machine hand out
// https://127.0.0.1 kubeconfigs, and the apiserver's certificate is still
// verified against the kubeconfig's CA. IPv4-mapped IPv6 addresses are
// judged as the IPv4 address they carry.
func ForbiddenAddr(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.IsLinkLocalUnicast():
		return "a link-local address"
	case ip.IsUnspecified(), ip.Is4() && ip.As4()[0] == 0:
		return "an unspecified address"
	case ip.IsMulticast():
		return "a multicast address"
	}
	switch ip.String() {
	case "fd00:ec2::254", "100.100.100.200": // AWS's IPv6 one, Alibaba Cloud's
		return "a cloud metadata endpoint"
	}
	return ""
}

// guardedDial returns the dial function of an untrusted kubeconfig's
// client: it checks the address actually connected to, after name
// resolution, with ForbiddenAddr.
func guardedDial() func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: refuseForbidden}
	return d.DialContext
}

// refuseForbidden is a net.Dialer Control function: it runs before each
// connection attempt, with the resolved address.
func refuseForbidden(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return refuse("untrusted kubeconfig: cannot check the address %q: %v", address, err)
	}
	if why := ForbiddenAddr(ap.Addr()); why != "" {
		return refuse("untrusted kubeconfig: server address %s is %s, not allowed", ap.Addr().Unmap(), why)
	}
	return nil
}
