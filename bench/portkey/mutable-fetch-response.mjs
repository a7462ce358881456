// Preloaded into the Portkey process only. Portkey 1.15.2 appends its own headers to the Response that
// fetch returned, which Node 20's fetch guards as immutable ("TypeError: immutable", Portkey-AI/gateway#1389,
// open; its fix PR #1390 re-wraps the response the same way). One re-wrap per request, no per-chunk cost.
const fetchImmutable = globalThis.fetch;
globalThis.fetch = async (...args) => {
  const response = await fetchImmutable(...args);
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers: response.headers });
};
