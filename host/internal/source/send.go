package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/httpretry"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/pdk/abi/grant"
)

var methods = map[string]bool{http.MethodGet: true, http.MethodHead: true, http.MethodPost: true,
	http.MethodPut: true, http.MethodPatch: true, http.MethodDelete: true}

func refuse(kind string, final bool, format string, args ...any) error {
	return &plugin.SourceError{Kind: kind, Final: final, Err: fmt.Errorf(format, args...)}
}

// Do sends one request to an allow-listed source for the credential group of namespace. A
// non-2xx answer is a Response; an error means there is none (*plugin.SourceError, or a
// *plugin.TooLargeError).
func (p *Proxy) Do(ctx context.Context, namespace string, req plugin.SourceRequest) (*plugin.Response, error) {
	method := strings.ToUpper(req.Method)
	op := fmt.Sprintf("%s %s %s", method, req.Source, req.Path)
	if !methods[method] {
		return nil, refuse(plugin.SourceInvalid, true, "%s: method %q is not one of GET, HEAD, POST, PUT, PATCH, DELETE", op, req.Method)
	}
	if err := grant.CheckSourcePath(req.Path); err != nil {
		return nil, refuse(plugin.SourceInvalid, true, "%s: unsafe path: %v", op, err)
	}
	tg, err := p.target(req.Source, req.URL)
	if err != nil {
		return nil, err
	}
	header := http.Header{}
	for k, vs := range req.Header {
		ck := http.CanonicalHeaderKey(k)
		if !plugin.Forwardable(ck) || strings.HasPrefix(ck, "X-") {
			return nil, refuse(plugin.SourceInvalid, true, "%s: header %s is not one a plugin may send to a source (allowed: Accept, Content-Type, If-Match, If-Modified-Since, If-None-Match, If-Unmodified-Since)", op, ck)
		}
		for _, v := range vs {
			if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
				return nil, refuse(plugin.SourceInvalid, true, "%s: header %s has a control character in its value", op, ck)
			}
		}
		header[ck] = append([]string(nil), vs...)
	}
	if header.Get("Accept") == "" {
		header.Set("Accept", "application/json")
	}
	if len(req.Body) > 0 && header.Get("Content-Type") == "" {
		header.Set("Content-Type", "application/json")
	}
	var cred *credential
	if req.Secret != nil {
		if cred, err = p.credential(ctx, namespace, *req.Secret); err != nil {
			return nil, err
		}
		header.Set(tg.Auth.Header, cred.headerValue(tg.Auth.Scheme))
	}
	u, err := join(tg.URL, req.Path, req.Query)
	if err != nil {
		return nil, refuse(plugin.SourceInvalid, true, "%s: %v", op, err)
	}
	header.Set("User-Agent", p.agent)
	resp, err := p.send(ctx, tg, op, method, u, header, req.Body)
	if err != nil {
		return nil, err
	}
	return cred.clean(resp, tg.Auth.Header), nil
}

// target finds the allow-listed URL a request names.
func (p *Proxy) target(name, raw string) (*target, error) {
	list := p.byName[name]
	if len(list) == 0 {
		return nil, refuse(plugin.SourceDenied, true, "source %q: the operator allow-lists no source of that name for this plugin (%s%s)",
			name, p.opts.Prefix, hookenv.SourcesSuffix)
	}
	u, err := hookenv.SourceURL(raw)
	if err != nil {
		return nil, refuse(plugin.SourceDenied, true, "source %q: url %v", name, err)
	}
	allowed := make([]string, 0, len(list))
	for _, tg := range list {
		if tg.URL == u {
			return tg, nil
		}
		allowed = append(allowed, tg.URL)
	}
	return nil, refuse(plugin.SourceDenied, true, "source %q: %s is not an allow-listed URL of this source (allowed: %s)",
		name, u, strings.Join(allowed, ", "))
}

// join puts a checked path under the base URL; the result must stay under it.
func join(base, path string, query url.Values) (*url.URL, error) {
	u, err := url.Parse(base + "/" + strings.TrimPrefix(path, "/"))
	if err != nil {
		return nil, fmt.Errorf("path %q does not form a URL: %v", path, err)
	}
	b, _ := url.Parse(base)
	if u.Scheme != b.Scheme || u.Host != b.Host || !strings.HasPrefix(u.EscapedPath(), strings.TrimSuffix(b.EscapedPath(), "/")+"/") {
		return nil, fmt.Errorf("path %q leaves the source's base URL", path)
	}
	if len(query) > 0 {
		u.RawQuery = query.Encode()
	}
	return u, nil
}

func (p *Proxy) send(ctx context.Context, tg *target, op, method string, u *url.URL, header http.Header, body []byte) (*plugin.Response, error) {
	for attempt := 1; ; attempt++ {
		if tg.limiter != nil {
			if err := tg.limiter.Wait(ctx); err != nil {
				return nil, refuse(plugin.SourceUnreachable, false, "%s: waiting for the source's rate limit: %v", op, err)
			}
		}
		start := time.Now()
		resp, err := p.attempt(ctx, tg, op, method, u, header, body)
		elapsed := time.Since(start)
		if err != nil {
			var te *httpretry.TransportError
			if ctx.Err() != nil || !errors.As(err, &te) {
				return nil, err
			}
			p.log.DebugContext(ctx, "source request failed", "source", tg.Name, "method", method, "path", u.Path,
				"error", te.Cause, "duration", elapsed, "attempt", attempt)
			if attempt < p.opts.MaxAttempts && !te.Final && (te.NotSent || httpretry.Idempotent(method)) {
				if p.sleep(ctx, p.backoff(attempt)) == nil {
					continue
				}
			}
			return nil, &plugin.SourceError{Kind: plugin.SourceUnreachable, Final: te.Final, Err: te}
		}
		p.log.DebugContext(ctx, "source request", "source", tg.Name, "method", method, "path", u.Path,
			"status", resp.StatusCode, "duration", elapsed, "attempt", attempt)
		if (resp.StatusCode == http.StatusTooManyRequests || httpretry.RetryableStatus(resp.StatusCode) && httpretry.Idempotent(method)) &&
			attempt < p.opts.MaxAttempts && p.waitToRetry(ctx, tg, method, resp, attempt) {
			continue
		}
		return resp, nil
	}
}

// waitToRetry sleeps before sending again and reports whether to: a Retry-After (429, 503) is
// honoured up to MaxRetryAfter and never past the caller's deadline; past either the answer goes
// to the plugin at once, as OpenStack's does.
func (p *Proxy) waitToRetry(ctx context.Context, tg *target, method string, resp *plugin.Response, attempt int) bool {
	wait, ok := time.Duration(0), false
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		wait, ok = httpretry.RetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	if !ok {
		wait = p.backoff(attempt)
	}
	if ok && wait > p.opts.MaxRetryAfter {
		p.log.InfoContext(ctx, "not waiting for the Retry-After the source asked for; the answer goes to the plugin",
			"source", tg.Name, "method", method, "status", resp.StatusCode, "retry_after", wait, "max", p.opts.MaxRetryAfter)
		return false
	}
	if dl, has := ctx.Deadline(); has && time.Until(dl) < wait {
		p.log.InfoContext(ctx, "not waiting to retry past the run's deadline; the answer goes to the plugin",
			"source", tg.Name, "method", method, "status", resp.StatusCode, "wait", wait)
		return false
	}
	return p.sleep(ctx, wait) == nil
}

func (p *Proxy) backoff(attempt int) time.Duration {
	return p.jitter(httpretry.Backoff(p.opts.RetryBaseDelay, p.opts.RetryMaxDelay, attempt))
}

func (p *Proxy) sleep(ctx context.Context, d time.Duration) error {
	if p.opts.Sleep != nil {
		return p.opts.Sleep(ctx, d)
	}
	return httpretry.Sleep(ctx, d)
}

// attempt sends the request once and reads the bounded answer.
func (p *Proxy) attempt(ctx context.Context, tg *target, op, method string, u *url.URL, header http.Header, body []byte) (*plugin.Response, error) {
	actx, cancel := context.WithTimeout(ctx, p.opts.RequestTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	hreq, err := http.NewRequestWithContext(actx, method, u.String(), rd)
	if err != nil {
		return nil, refuse(plugin.SourceInvalid, true, "%s: %v", op, err)
	}
	for k, vs := range header {
		hreq.Header[k] = vs
	}
	failed := func(err error) error {
		if ctx.Err() != nil {
			return refuse(plugin.SourceUnreachable, false, "%s: %v", op, ctx.Err())
		}
		// The error of a failed exchange names the URL, never a header: the credential is not in it.
		return httpretry.Classify(op, u.Host, err, p.opts.RequestTimeout, "set the source's ca in "+p.opts.Prefix+hookenv.SourcesSuffix)
	}
	resp, err := tg.client.Do(hreq)
	if err != nil {
		return nil, failed(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, p.opts.MaxResponseBytes+1))
	if err != nil {
		return nil, failed(err)
	}
	if int64(len(data)) > p.opts.MaxResponseBytes {
		return nil, &plugin.TooLargeError{Op: op, Size: int64(len(data)), Limit: p.opts.MaxResponseBytes}
	}
	return &plugin.Response{StatusCode: resp.StatusCode, Header: resp.Header, Body: data}, nil
}
