// Preloaded into Node.js (NODE_OPTIONS=--require): every fetch carries the cadmcp bearer
// token from CADMCP_BEARER, as a client configured with the header would send it. The
// conformance suite's server runner has no option for headers.
const token = process.env.CADMCP_BEARER;
const original = globalThis.fetch;
globalThis.fetch = (input, init = {}) => {
  const headers = new Headers(init.headers || (input instanceof Request ? input.headers : undefined));
  if (token && !headers.has("authorization")) headers.set("authorization", `Bearer ${token}`);
  return original(input, { ...init, headers });
};
