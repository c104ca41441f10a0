import type { Express } from 'express';

/** One operation the app answers: an upper-case method and an OpenAPI path template (`/a/{id}`). */
export interface RouteOperation {
  method: string;
  path: string;
}

interface Layer {
  route?: { path: unknown; methods: Record<string, boolean> };
  handle: { stack?: Layer[]; name?: string };
  rawPath?: unknown;
}

const joinPath = (prefix: string, path: string) => {
  const joined = `${prefix}/${path}`.replace(/\/+/g, '/');
  return joined.length > 1 ? joined.replace(/\/$/, '') : joined;
};

/** express's `:id` becomes OpenAPI's `{id}`. */
const template = (path: string) => path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');

/**
 * Every method and path the express app really routes, read from its router stack (express 5, router
 * 2.x, which keeps each layer's `rawPath`): routes of the app and of every router mounted on it, at any
 * depth. Plain middleware is skipped. HEAD, which express answers for every GET, is not listed. A path
 * that cannot be read as a string (a RegExp, an array) or a route for every method (`all`) throws, so a
 * check built on this cannot pass by overlooking a route.
 */
export function routesOf(app: Express): RouteOperation[] {
  const router = (app as unknown as { router: { stack: Layer[] } }).router;
  const found: RouteOperation[] = [];
  const walk = (stack: Layer[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        const { path, methods } = layer.route;
        if (typeof path !== 'string') throw new Error(`A route path is not a string: ${String(path)}`);
        for (const method of Object.keys(methods).filter((m) => methods[m])) {
          if (method === '_all') throw new Error(`${path} is routed for every method; list them instead.`);
          found.push({ method: method.toUpperCase(), path: template(joinPath(prefix, path)) });
        }
      } else if (Array.isArray(layer.handle.stack)) {
        if (typeof layer.rawPath !== 'string')
          throw new Error(`A router is mounted at a path that is not a string: ${String(layer.rawPath)}`);
        walk(layer.handle.stack, joinPath(prefix, layer.rawPath));
      } else if (layer.handle.name === 'mounted_app') {
        throw new Error(`An express app is mounted at ${String(layer.rawPath)}; mount a Router instead.`);
      }
    }
  };
  walk(router.stack, '');
  return found;
}

const httpMethods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Every operation of an OpenAPI document's `paths`. */
export function operationsOf(document: {
  paths?: Record<string, Record<string, unknown>>;
}): RouteOperation[] {
  return Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((key) => httpMethods.includes(key))
      .map((method) => ({ method: method.toUpperCase(), path })),
  );
}
