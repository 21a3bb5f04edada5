'use strict';

const http = require('node:http');
const client = require('prom-client');

const port = Number(process.env.PORT ?? 8080);
// svcbench's {host}; loopback when unset (Node's default would be every interface).
const host = process.env.HOST || '127.0.0.1';
const upstreamUrl = process.env.UPSTREAM_URL ?? 'http://127.0.0.1:9100';
// The upstream may take up to 8 s.
const UPSTREAM_TIMEOUT_MS = 30_000;

// prom-client's default registry: process/runtime metrics plus our request metrics.
client.collectDefaultMetrics();
const requests = new client.Counter({
  name: 'http_requests_total',
  help: 'HTTP requests served',
  labelNames: ['method', 'route', 'status'],
});
const duration = new client.Histogram({
  name: 'http_request_duration_seconds',
  help: 'HTTP request latency in seconds',
  labelNames: ['method', 'route', 'status'],
});

class UpstreamError extends Error {}

// One upstream call per request; any failure becomes an UpstreamError (answered with 502).
async function fetchValue() {
  let res;
  try {
    res = await fetch(upstreamUrl, { signal: AbortSignal.timeout(UPSTREAM_TIMEOUT_MS) });
  } catch (err) {
    throw new UpstreamError(`upstream unreachable: ${err.cause?.code ?? err.message}`);
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new UpstreamError(`upstream answered ${res.status}`);
  }
  const text = (await res.text()).trim();
  if (!/^-?\d+$/.test(text)) {
    throw new UpstreamError('upstream answered with a non-integer body');
  }
  return Number(text);
}

function sendJson(res, status, body) {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(payload),
  });
  res.end(payload);
}

async function route(req, res) {
  if (req.method === 'GET' && req.url === '/') {
    try {
      sendJson(res, 200, { value: await fetchValue() });
    } catch (err) {
      if (!(err instanceof UpstreamError)) throw err;
      sendJson(res, 502, { message: err.message });
    }
    return '/';
  }
  if (req.method === 'GET' && req.url === '/metrics') {
    const body = await client.register.metrics();
    res.writeHead(200, { 'Content-Type': client.register.contentType });
    res.end(body);
    return '/metrics';
  }
  sendJson(res, 404, { message: 'not found' });
  return 'other';
}

const server = http.createServer((req, res) => {
  const endTimer = duration.startTimer();
  route(req, res)
    .catch((err) => {
      console.error(err);
      if (!res.headersSent) sendJson(res, 500, { message: 'internal error' });
      return 'error';
    })
    .then((routeName) => {
      const labels = { method: req.method, route: routeName, status: res.statusCode };
      requests.inc(labels);
      endTimer(labels);
    });
});

server.listen(port, host, () => {
  console.log(`upstream-node listening on ${host}:${port}, upstream ${upstreamUrl}`);
});

// SIGTERM: stop accepting, let in-flight requests finish, then exit 0.
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
});
