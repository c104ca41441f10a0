import { Router } from 'express';

/** Where the gateway serves the OpenAPI document the page renders. */
const documentPath = '/v1/openapi.json';
const scriptPath = '/v1/docs/redoc.standalone.js';

/**
 * Redoc's page needs its own script, the document, inline styles (styled-components) and a search worker
 * it starts from a blob: URL; nothing from another origin, no inline script, no frames, no forms.
 */
const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  'worker-src blob:',
  'child-src blob:',
  "style-src 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

/**
 * GET /v1/docs: the API reference, Redoc over the served OpenAPI document, and Redoc's script from the
 * gateway itself (the `redoc` package, resolved in node_modules, so the built image needs nothing from
 * outside). Like the document, no credential and no rate limit.
 */
export function docsRoutes(document: Record<string, unknown>): Router {
  const info = document.info as { title?: unknown } | undefined;
  const title = `${typeof info?.title === 'string' ? info.title : 'API'} reference`;
  const script = require.resolve('redoc/bundles/redoc.standalone.js');
  // The <redoc> element starts Redoc once its script loads, so the page needs no inline script.
  const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
</head>
<body>
<redoc spec-url="${documentPath}" sort-required-props-first="true"></redoc>
<script src="${scriptPath}"></script>
</body>
</html>
`;
  const router = Router();

  router.get('/', (_req, res) => {
    res
      .set({
        'Content-Security-Policy': contentSecurityPolicy,
        'X-Content-Type-Options': 'nosniff',
        'Referrer-Policy': 'no-referrer',
        'Cache-Control': 'no-cache',
      })
      .type('html')
      .send(page);
  });

  router.get('/redoc.standalone.js', (_req, res, next) => {
    // The file changes only with the redoc version: a day's caching, revalidated by its date (the app
    // sends no ETags). No ranges: a request for part of the file gets all of it, as the document says.
    res.sendFile(
      script,
      {
        maxAge: '1d',
        acceptRanges: false,
        headers: { 'X-Content-Type-Options': 'nosniff', 'Content-Type': 'text/javascript; charset=utf-8' },
      },
      (error) => error && next(error),
    );
  });

  return router;
}
