// Package remoteurl holds what the remote manifest sources (Git and chart
// repositories) do alike with the URLs a config names: saying one in an
// error without its password, and telling a loopback host (where plain
// http may carry credentials).
package remoteurl

import (
	"net"
	"strings"
)

// Redact returns a URL as written with the password of its user
// information, if any, replaced by "xxxxx", for error messages: it works on
// the text, so also on a URL that does not parse.
func Redact(raw string) string {
	start := 0
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + len("://")
	}
	end := len(raw)
	if i := strings.IndexAny(raw[start:], "/?#"); i >= 0 {
		end = start + i
	}
	at := strings.LastIndexByte(raw[start:end], '@')
	if at < 0 {
		return raw
	}
	userinfo := raw[start : start+at]
	colon := strings.IndexByte(userinfo, ':')
	if colon < 0 {
		return raw
	}
	return raw[:start+colon+1] + "xxxxx" + raw[start+at:]
}

// IsLoopback reports whether host (a name or an address, without a port)
// is localhost or a loopback address.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
