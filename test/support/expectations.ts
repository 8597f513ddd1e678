import { randomUUID } from 'crypto';

/** An ISO 8601 timestamp as the API writes it (Date#toISOString). */
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The keys of every paginated answer. */
export const PAGE_KEYS = ['current_page', 'data', 'last_page', 'per_page', 'total', 'total_exact'];

/** A short random tag that keeps names unique across tests sharing one database. */
export const tag = () => randomUUID().slice(0, 8);

/** The ids of a page's rows, in order. */
export const ids = (body: { data: Array<{ id: string }> }) => body.data.map((x) => x.id);

/** The contract's 422 body when one field is refused with one message. */
export const refusal = (field: string, message: string) => ({ message, errors: { [field]: [message] } });

/** Refused list queries, one field each, with the one message it gets: [query, field, message]. */
export const LIST_QUERY_REFUSALS: Array<[Record<string, string>, string, string]> = [
  [{ page: '0' }, 'page', 'The page field must be at least 1.'],
  [{ page: '2x' }, 'page', 'The page field must be an integer.'],
  [{ page: '1e2' }, 'page', 'The page field must be an integer.'],
  [{ tenant_id: 'nope' }, 'tenant_id', 'The tenant id field must be a valid UUID.'],
  [{ unit_id: '123' }, 'unit_id', 'The unit id field must be a valid UUID.'],
  [{ search: 's'.repeat(256) }, 'search', 'The search field must not be greater than 255 characters.'],
];

/** The refusals of a list without the unit_id filter. */
export const TENANT_LIST_QUERY_REFUSALS = LIST_QUERY_REFUSALS.filter(([, field]) => field !== 'unit_id');
