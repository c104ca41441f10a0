import { BadRequestError } from '@costgov/errors';

export interface Page {
  page: number;
  perPage: number;
}

export interface PageMeta {
  currentPage: number;
  perPage: number;
  totalPages: number;
  totalCount: number;
}

export const defaultPerPage = 25;
export const maxPerPage = 100;

/** Reads a page request (0 means "not given"), refusing what the API refuses. */
export function pageOf(request: { page?: number; perPage?: number } | undefined): Page {
  const page = request?.page || 1;
  const perPage = request?.perPage || defaultPerPage;
  if (!Number.isInteger(page) || page < 1)
    throw new BadRequestError('page must be an integer of at least 1.', [
      { field: 'page', message: 'must be >= 1' },
    ]);
  if (!Number.isInteger(perPage) || perPage < 1 || perPage > maxPerPage) {
    throw new BadRequestError(`per_page must be an integer from 1 to ${maxPerPage}.`, [
      { field: 'per_page', message: `must be 1..${maxPerPage}` },
    ]);
  }
  return { page, perPage };
}

export const limitOffset = ({ page, perPage }: Page) => ({ limit: perPage, offset: (page - 1) * perPage });

export const pageMeta = ({ page, perPage }: Page, totalCount: number): PageMeta => ({
  currentPage: page,
  perPage,
  totalPages: Math.ceil(totalCount / perPage),
  totalCount,
});
