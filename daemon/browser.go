package daemon

import (
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// browserGuard keeps web pages out of the daemon's API: a page open in a
// browser on this machine can send requests to a loopback port (cross-site
// requests) and, through a name that resolves to 127.0.0.1 (DNS
// rebinding), read the answers. It refuses, with 403 unless said otherwise:
//
//   - on a loopback connection, a Host that is not a loopback name or IP
//     ("localhost", 127.0.0.0/8, ::1) nor in daemon.allowed_hosts: a
//     rebinding page's requests carry its own host name. Webhook
//     deliveries (/hooks/) are exempt: they need the webhook secret, and
//     Grist in a container names the host its own way; so are /healthz
//     and /readyz, which probes call by any name and which tell nothing;
//   - a request whose Origin is not the request's own (scheme://Host), or
//     whose Sec-Fetch-Site is cross-site or same-site: browsers send them
//     on every cross-origin POST and fetch;
//   - a state-changing API call (any method but GET, HEAD, OPTIONS on
//     /api/) with the Content-Type of an HTML form or a "simple" request
//     (application/x-www-form-urlencoded, multipart/form-data,
//     text/plain): 415;
//   - a state-changing API call without daemon.api_token configured,
//     unless daemon.anonymous_writes is true.
func (d *Daemon) browserGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		exempt := strings.HasPrefix(r.URL.Path, "/hooks/") || r.URL.Path == "/healthz" || r.URL.Path == "/readyz"
		if !exempt && loopbackConn(r) && !d.hostAllowed(r.Host) {
			d.refuse(rw, r, http.StatusForbidden, "host %q is not a loopback name this daemon answers (set daemon.allowed_hosts)", r.Host)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r.Host) {
			d.refuse(rw, r, http.StatusForbidden, "cross-origin request from %q refused", o)
			return
		}
		if s := r.Header.Get("Sec-Fetch-Site"); s == "cross-site" || s == "same-site" {
			d.refuse(rw, r, http.StatusForbidden, "cross-site request refused (Sec-Fetch-Site: %s)", s)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/api/") && !safeMethod(r.Method) {
			if formContentType(r.Header.Get("Content-Type")) {
				d.refuse(rw, r, http.StatusUnsupportedMediaType, "content type %q refused on a state-changing call; send no body or application/json", r.Header.Get("Content-Type"))
				return
			}
			if d.cfg.APIToken == "" && !d.cfg.AnonymousWrites {
				d.refuse(rw, r, http.StatusForbidden, "state-changing calls need daemon.api_token (or daemon.anonymous_writes: true)")
				return
			}
		}
		next.ServeHTTP(rw, r)
	})
}

// refuse answers a request browserGuard refused and logs it.
func (d *Daemon) refuse(rw http.ResponseWriter, r *http.Request, code int, format string, args ...any) {
	d.log.Warn("request refused", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "code", code)
	writeError(rw, code, format, args...)
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// formContentType reports whether ct is a content type an HTML form or a
// CORS "simple" request can send.
func formContentType(ct string) bool {
	if ct == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return true // unparseable: refuse rather than guess
	}
	return mt == "application/x-www-form-urlencoded" || mt == "multipart/form-data" || mt == "text/plain"
}

// loopbackConn reports whether the request came in on a loopback listener.
func loopbackConn(r *http.Request) bool {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && Loopback(a)
}

// hostAllowed reports whether a Host header names this machine's loopback
// interface or one of daemon.allowed_hosts.
func (d *Daemon) hostAllowed(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.Trim(h, "[]"), ".")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		return true
	}
	return slices.ContainsFunc(d.cfg.AllowedHosts, func(a string) bool { return strings.EqualFold(a, h) })
}

// sameOrigin reports whether an Origin header names the request's own
// host (any scheme: the daemon serves plain HTTP behind TLS proxies too).
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false // "null" and the like
	}
	return strings.EqualFold(u.Host, host)
}
