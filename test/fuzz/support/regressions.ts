import { FuzzWorld, ValidCaller } from './world';

/**
 * Requests that once broke the API (issue 13: a 500, a 200 that changed nothing, a reset before
 * the answer), replayed on every fuzz run with the status and body they must get.
 */
export interface Regression {
  name: string;
  caller: ValidCaller | null;
  method: 'POST' | 'PATCH';
  url: (world: FuzzWorld) => string;
  headers?: Record<string, string>;
  payload: string | Buffer;
  status: number;
  body: unknown;
}

const JSON_TYPE = { 'content-type': 'application/json' };
const SURROGATE_EMAIL = 'The email field must be well-formed Unicode text (it holds a lone surrogate).';
const NOT_OBJECT = 'The request body must be a JSON object.';
/** JSON text of a lone surrogate: JSON.stringify would write it escaped, as a client does. */
const LONE = '"\\ud800"';
const TWELVE_MIB = 12 * 1024 * 1024;
const tooLarge = { status: 413, body: { message: 'Payload too large.' } };
const userId = (world: FuzzWorld) => world.ids('user')[0].id;
const templateId = (world: FuzzWorld) => world.ids('template')[0].id;

export const REGRESSIONS: Regression[] = [
  {
    name: "a lone surrogate as a new user's email",
    caller: 'root',
    method: 'POST',
    url: () => '/api/admin/users',
    headers: JSON_TYPE,
    payload: `{"email":${LONE},"name":"X","password":"a-long-password","tenant_id":"00000000-0000-4000-8000-000000000000","unit_id":"00000000-0000-4000-8000-000000000000"}`,
    status: 422,
    body: { message: SURROGATE_EMAIL, errors: { email: [SURROGATE_EMAIL] } },
  },
  {
    name: "a lone surrogate in a user's email, patched",
    caller: 'root',
    method: 'PATCH',
    url: (world) => `/api/admin/users/${userId(world)}`,
    headers: JSON_TYPE,
    payload: `{"email":"a${LONE.slice(1, -1)}@example.test"}`,
    status: 422,
    body: { message: SURROGATE_EMAIL, errors: { email: [SURROGATE_EMAIL] } },
  },
  ...(['/api/admin/users/', '/api/tenant/templates/'] as const).map((path): Regression => ({
    name: `PATCH ${path}{id} with a null body`,
    caller: path.startsWith('/api/admin') ? 'root' : 'admin',
    method: 'PATCH',
    url: (world) => `${path}${path.includes('users') ? userId(world) : templateId(world)}`,
    headers: JSON_TYPE,
    payload: 'null',
    status: 422,
    body: { message: NOT_OBJECT, errors: { body: [NOT_OBJECT] } },
  })),
  {
    name: 'POST /api/admin/tenants with a null body',
    caller: 'root',
    method: 'POST',
    url: () => '/api/admin/tenants',
    headers: JSON_TYPE,
    payload: 'null',
    status: 422,
    body: { message: NOT_OBJECT, errors: { body: [NOT_OBJECT] } },
  },
  {
    name: 'a 12 MiB body to /api/admin/tenants',
    caller: 'root',
    method: 'POST',
    url: () => '/api/admin/tenants',
    headers: JSON_TYPE,
    payload: Buffer.alloc(TWELVE_MIB, 0x20),
    ...tooLarge,
  },
  {
    name: 'a 12 MiB body to the webhook',
    caller: null,
    method: 'POST',
    url: () => '/api/imgsrv/webhook',
    headers: JSON_TYPE,
    payload: Buffer.alloc(TWELVE_MIB, 0x20),
    ...tooLarge,
  },
  {
    name: 'a form-encoded body anywhere but the webhook',
    caller: 'root',
    method: 'POST',
    url: () => '/api/admin/tenants',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'name=Clinic',
    status: 415,
    body: { message: 'Unsupported media type.' },
  },
];
