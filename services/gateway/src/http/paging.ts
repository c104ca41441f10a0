import type { PageMeta, PageRequest } from '@costgov/contracts';

/** `page` and `per_page` of a list's query (validated against the document) as the services' page request. */
export const pageOf = (query: {
  page?: string;
  per_page?: string;
}): Pick<PageRequest, 'page' | 'perPage'> => ({
  page: Number(query.page ?? 1),
  perPage: Number(query.per_page ?? 25),
});

/** A service's page meta as the envelope's `meta`. */
export const metaJson = (meta: Pick<PageMeta, 'currentPage' | 'perPage' | 'totalPages' | 'totalCount'>) => ({
  current_page: meta.currentPage,
  per_page: meta.perPage,
  total_pages: meta.totalPages,
  total_count: meta.totalCount,
});
