package daemon

import (
	"errors"
	"net"
	"net/http"
	"time"
)

// HTTPLimits bound what one client can hold of the daemon's HTTP server.
// A zero field takes its value from DefaultHTTPLimits.
type HTTPLimits struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, headers and body: the
	// body deadline of a slow webhook POST.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response (from the end of the
	// request's headers).
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no request
	// for this long.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps the request line and headers (bytes); larger
	// requests get 431.
	MaxHeaderBytes int
}

// DefaultHTTPLimits are the daemon's server limits: a webhook body of
// daemon.max_body_bytes (1 MiB by default) must arrive within 30 s, an
// idle keep-alive connection is closed after 2 min.
var DefaultHTTPLimits = HTTPLimits{
	ReadHeaderTimeout: 10 * time.Second,
	ReadTimeout:       30 * time.Second,
	WriteTimeout:      60 * time.Second,
	IdleTimeout:       2 * time.Minute,
	MaxHeaderBytes:    64 << 10,
}

func (l HTTPLimits) withDefaults() HTTPLimits {
	def := DefaultHTTPLimits
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = def.ReadHeaderTimeout
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = def.ReadTimeout
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = def.WriteTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = def.IdleTimeout
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = def.MaxHeaderBytes
	}
	return l
}

// server is the daemon's http.Server with its limits.
func (d *Daemon) server() *http.Server {
	l := d.limits
	return &http.Server{
		Handler:           d.Handler(),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}

// ErrOpenAPI is returned by Run when asked to serve the API on an address
// other machines can reach (not loopback) while daemon.api_token is empty
// and Options.InsecureNoAuth is not set: anyone on the network could queue
// re-embeddings and confirm mass deletes.
var ErrOpenAPI = errors.New("refusing to serve the API without daemon.api_token on an address other machines can reach; " +
	"set daemon.api_token, listen on 127.0.0.1, or pass --insecure-no-auth")

// Loopback reports whether a listener's address only takes connections
// from this machine: a loopback IP (127.0.0.0/8, ::1) or a Unix socket.
// An unspecified address (":8080", "0.0.0.0", "[::]") listens on every
// interface and is not loopback.
func Loopback(addr net.Addr) bool {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
