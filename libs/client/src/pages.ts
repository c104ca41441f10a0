import type { Client } from 'openapi-fetch';
import { unwrap } from './errors';
import type { components, paths } from './gen/schema';

type PageMeta = components['schemas']['PageMeta'];
interface ListBody {
  data: unknown[];
  meta: PageMeta;
}

/** The paths whose GET answers a paged Guard list, `{"data": [...], "meta": {...}}`. */
export type ListPath = {
  [P in keyof paths]: paths[P] extends {
    get: { responses: { 200: { content: { 'application/json': ListBody } } } };
  }
    ? P
    : never;
}[keyof paths];

type ListOperation<P extends ListPath> = paths[P]['get'];
type ListQuery<P extends ListPath> = Omit<NonNullable<ListOperation<P>['parameters']['query']>, 'page'>;
type ListPathParams<P extends ListPath> = ListOperation<P>['parameters'] extends { path: infer A }
  ? { path: A }
  : { path?: undefined };

/** One item of the list a path answers. */
export type ListItem<P extends ListPath> =
  ListOperation<P>['responses'][200]['content']['application/json']['data'][number];

/** The filters and sort of a list (every query parameter but `page`), and its path parameters if any. */
export type ListParams<P extends ListPath> = { query?: ListQuery<P> } & ListPathParams<P>;

/**
 * Every item of a list, page after page (`per_page` 100 unless given), until the last page. A page that
 * fails throws GuardApiError. Pages are read one at a time as the loop asks for items; items created or
 * deleted meanwhile may shift a page boundary (the API pages by offset), so an item can be missed or
 * seen twice in a list that changes while it is read.
 *
 *   for await (const violation of listAll(client, '/v1/guard/violations', { query: { status: 'open' } })) ...
 */
export async function* listAll<P extends ListPath>(
  client: Client<paths>,
  path: P,
  ...[params]: ListPathParams<P> extends { path: object } ? [ListParams<P>] : [ListParams<P>?]
): AsyncGenerator<ListItem<P>, void, undefined> {
  // The path is generic here, which openapi-fetch's overloads cannot follow; the signature above keeps
  // callers exact.
  const get = client.GET as unknown as (
    path: string,
    init: { params: object },
  ) => Promise<{ data: ListBody; response: Response } | { data?: never; error: unknown; response: Response }>;
  const { query, ...rest } = (params ?? {}) as { query?: Record<string, unknown>; path?: object };
  for (let page = 1; ; page++) {
    const body = await unwrap(get(path, { params: { ...rest, query: { per_page: 100, ...query, page } } }));
    yield* body.data as ListItem<P>[];
    if (body.data.length === 0 || page >= body.meta.total_pages) return;
  }
}
