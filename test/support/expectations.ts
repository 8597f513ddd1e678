import { randomUUID } from 'crypto';

/** An ISO 8601 timestamp as the API writes it (Date#toISOString). */
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The keys of every paginated answer. */
export const PAGE_KEYS = ['current_page', 'data', 'last_page', 'per_page', 'total', 'total_exact'];

/** A short random tag that keeps names unique across tests sharing one database. */
export const tag = () => randomUUID().slice(0, 8);

/** The ids of a page's rows, in order. */
export const ids = (body: { data: Array<{ id: string }> }) => body.data.map((x) => x.id);

/** The messages of a refused list query (page, search and the uuid filters). */
export const LIST_QUERY_MESSAGES = {
  pageBelowOne: 'The page field must be at least 1.',
  pageNotInteger: 'The page field must be an integer.',
  tenantId: 'The tenant id field must be a valid UUID.',
  unitId: 'The unit id field must be a valid UUID.',
  searchTooLong: 'The search field must not be greater than 255 characters.',
};

/** The contract's 422 body when one field is refused with one message. */
export const refusal = (field: string, message: string) => ({ message, errors: { [field]: [message] } });
