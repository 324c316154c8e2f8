'use strict';
// sandboxkit: an explicit opt-in Node preload (node --require <this file>)
// that sends e2b 1.x's requests to sandboxkit's fake provider.
//
// e2b 1.x reads neither E2B_API_URL nor E2B_SANDBOX_URL: it calls
// https://api.<E2B_DOMAIN> for the API and https://<port>-<id>.<E2B_DOMAIN>
// for every sandbox port (e2b@1.13.2 dist/index.mjs ConnectionConfig.apiUrl,
// Sandbox.getHost), all through the global fetch (openapi-fetch's client and
// the envd transport's fetch option). This file replaces globalThis.fetch
// once, before the program loads: a request to api.<E2B_DOMAIN> goes to
// E2B_API_URL, one to <port>-<id>.<E2B_DOMAIN> goes to E2B_SANDBOX_URL with
// the headers E2b-Sandbox-Id and E2b-Sandbox-Port that name its sandbox
// (what e2b 2.x sends itself). Every other request is untouched. Without
// E2B_API_URL it does nothing.
(function redirectE2BFetch() {
  const apiURL = process.env.E2B_API_URL;
  const sandboxURL = process.env.E2B_SANDBOX_URL || apiURL;
  const domain = process.env.E2B_DOMAIN || 'e2b.app';
  const original = globalThis.fetch;
  if (!apiURL || typeof original !== 'function' || original.sandboxkitRedirect) {
    return;
  }

  // target returns where a request to url goes and the headers to add, or
  // null to leave it alone.
  function target(url) {
    if (url.hostname === 'api.' + domain) {
      return { base: apiURL, headers: {} };
    }
    if (!url.hostname.endsWith('.' + domain)) {
      return null;
    }
    const label = url.hostname.slice(0, -(domain.length + 1));
    const m = /^(\d+)-([^.]+)$/.exec(label);
    if (!m) {
      return null;
    }
    return { base: sandboxURL, headers: { 'E2b-Sandbox-Port': m[1], 'E2b-Sandbox-Id': m[2] } };
  }

  function redirected(input, init) {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const t = target(url);
    if (!t) {
      return null;
    }
    const req = new Request(input, init);
    const headers = new Headers(req.headers);
    for (const [k, v] of Object.entries(t.headers)) {
      headers.set(k, v);
    }
    return new Request(new URL(url.pathname + url.search, t.base), {
      method: req.method,
      headers,
      body: req.body,
      duplex: 'half',
      signal: req.signal,
      redirect: req.redirect,
    });
  }

  const redirect = function fetch(input, init) {
    let req;
    try {
      req = redirected(input, init);
    } catch (err) {
      return Promise.reject(err);
    }
    return req ? original(req) : original(input, init);
  };
  redirect.sandboxkitRedirect = true;
  globalThis.fetch = redirect;
})();
