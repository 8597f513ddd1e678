import { lyingDataUrl, malformedJson, nastyString, nestedArrays, SQL, LIKE, wrongValue } from './payloads';
import { Prng } from './prng';
import { Caller, FuzzWorld, HOSTILE_CALLERS, IdKind, VALID_CALLERS } from './world';

export interface OpenApiParameter {
  in: 'path' | 'query' | 'header';
  name: string;
  required?: boolean;
  schema?: { type?: string; format?: string };
}

export interface Operation {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT';
  path: string;
  parameters: OpenApiParameter[];
  bodySchema: Schema | null;
  documented: Set<number>;
  secured: boolean;
}

export interface Schema {
  type?: string;
  format?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  $ref?: string;
  allOf?: Schema[];
  enum?: unknown[];
  maxLength?: number;
  minLength?: number;
  nullable?: boolean;
  items?: Schema;
}

export interface FuzzRequest {
  op: Operation;
  url: string;
  headers: Record<string, string>;
  payload?: Buffer;
  caller: Caller;
  /** What the oracles need to know about this request. */
  facts: {
    bodySent: boolean;
    oversized: boolean;
    unsupportedType: boolean;
    routeMangled: boolean;
    foreignPathId: boolean;
    otherUnitPathId: boolean;
    foreignBodyStudy: boolean;
    viewerCrossTenant: boolean;
    wrongWebhookSecret: boolean;
    strategy: string;
  };
}

const BODY_LIMIT = 10 * 1024 * 1024;

/** encodeURIComponent, except that a lone surrogate becomes its (invalid) 3-byte UTF-8 form. */
export function encodeLoose(value: string): string {
  let out = '';
  for (const char of value) {
    const code = char.charCodeAt(0);
    if (char.length === 1 && code >= 0xd800 && code <= 0xdfff) {
      out += [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)]
        .map((b) => `%${b.toString(16).toUpperCase()}`)
        .join('');
    } else {
      out += encodeURIComponent(char);
    }
  }
  return out;
}

/** Turns the OpenAPI document into the list of operations to fuzz. */
export function operationsOf(document: any): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries<any>(document.paths)) {
    for (const [method, op] of Object.entries<any>(methods)) {
      const schema = op.requestBody?.content?.['application/json']?.schema ?? null;
      ops.push({
        method: method.toUpperCase() as Operation['method'],
        path,
        parameters: op.parameters ?? [],
        bodySchema: schema,
        documented: new Set(Object.keys(op.responses ?? {}).map(Number)),
        secured: Array.isArray(op.security) && op.security.length > 0,
      });
    }
  }
  return ops;
}

const KIND_BY_SEGMENT: Record<string, IdKind> = {
  studies: 'study',
  series: 'series',
  instances: 'instance',
  patients: 'patient',
  templates: 'template',
  'report-presets': 'preset',
  tenants: 'tenant',
  units: 'unit',
  users: 'user',
  modalities: 'modality',
};

const KIND_BY_FIELD: Record<string, IdKind> = {
  tenant_id: 'tenant',
  unit_id: 'unit',
  study_id: 'study',
  patient_uuid: 'patient',
  exclude_id: 'study',
  seriesId: 'series',
  series_id: 'series',
  instance: 'instance',
  reportId: 'report',
};

function kindOfPathParam(path: string, name: string): IdKind {
  if (KIND_BY_FIELD[name] && name !== 'id') return KIND_BY_FIELD[name];
  const segments = path.split('/');
  const index = segments.indexOf(`{${name}}`);
  return KIND_BY_SEGMENT[segments[index - 1]] ?? 'study';
}

export class RequestGenerator {
  constructor(
    private readonly rng: Prng,
    private readonly world: FuzzWorld,
    private readonly document: any,
    private readonly webhookSecret: string,
  ) {}

  next(op: Operation): FuzzRequest {
    const rng = this.rng;
    const facts: FuzzRequest['facts'] = {
      bodySent: false,
      oversized: false,
      unsupportedType: false,
      routeMangled: false,
      foreignPathId: false,
      otherUnitPathId: false,
      foreignBodyStudy: false,
      viewerCrossTenant: false,
      wrongWebhookSecret: false,
      strategy: '',
    };
    const caller: Caller = rng.chance(0.72) ? rng.pick(VALID_CALLERS) : rng.pick(HOSTILE_CALLERS);
    const home = this.world.clinicOf(caller);
    const headers: Record<string, string> = {};

    // Path: ids of the caller's clinic, of the other clinic, random, or not ids at all.
    let path = op.path;
    for (const param of op.parameters.filter((p) => p.in === 'path')) {
      const kind = kindOfPathParam(op.path, param.name);
      const { value, foreign, otherUnit, mangled, raw } = this.pathValue(kind, home);
      facts.foreignPathId ||= foreign;
      facts.otherUnitPathId ||= otherUnit;
      facts.routeMangled ||= mangled;
      path = path.replace(`{${param.name}}`, raw ? value : encodeLoose(value));
    }

    const query = this.queryString(op);
    const url = query ? `${path}?${query}` : path;

    // Authentication: bearer header, cookie, or both disagreeing.
    const token = this.world.tokenFor(caller);
    if (token !== null) {
      const where = rng.weighted([
        [8, 'bearer'],
        [2, 'cookie'],
        [1, 'both'],
        [0.5, 'lowercase-scheme'],
      ] as const);
      if (where === 'bearer' || where === 'both') headers.authorization = `Bearer ${token}`;
      if (where === 'lowercase-scheme') headers.authorization = `bearer ${token}`;
      if (where === 'cookie') headers.cookie = `pacs_access_token=${token}`;
      if (where === 'both') headers.cookie = `pacs_access_token=${this.world.tokenFor('garbage')}`;
    } else if (rng.chance(0.2)) {
      headers.authorization = rng.pick([
        'Bearer',
        'Bearer ',
        'Basic dXNlcjpwYXNz',
        `Bearer ${nastyString(rng)}`,
        'Bearer a.b.c',
      ]);
    }

    this.specialHeaders(op, headers, facts);
    if (rng.chance(0.1)) headers['x-forwarded-for'] = rng.pick(['127.0.0.1', '10.0.0.1, 1.2.3.4', 'garbage', '::1']);
    if (rng.chance(0.05))
      headers['x-request-id'] = rng.pick([nastyString(rng).replace(/[\r\n\u0000-\u001f\u007f-\uffff]/g, ''), 'x'.repeat(4000)]);

    const body = this.body(op, home, facts);
    if (body) {
      Object.assign(headers, body.headers);
      facts.bodySent = true;
      facts.strategy = body.strategy;
      facts.oversized = body.payload.length > BODY_LIMIT;
      facts.unsupportedType = body.unsupported;
    }
    return { op, url, headers, payload: body?.payload, caller, facts };
  }

  private pathValue(kind: IdKind, home: 'a' | 'b' | null) {
    const rng = this.rng;
    const pool = this.world.ids(kind);
    return rng.weighted<() => { value: string; foreign: boolean; otherUnit: boolean; mangled: boolean; raw?: boolean }>([
      [
        5,
        () => {
          const own = pool.filter((r) => r.clinic === (home ?? 'a'));
          const pick = rng.pick(own.length ? own : pool);
          return { value: pick.id, foreign: false, otherUnit: !!pick.unit2, mangled: false };
        },
      ],
      [
        3,
        () => {
          const theirs = pool.filter((r) => r.clinic !== (home ?? 'a'));
          return { value: rng.pick(theirs).id, foreign: home !== null, otherUnit: false, mangled: false };
        },
      ],
      [1, () => ({ value: rng.uuid(), foreign: false, otherUnit: false, mangled: false })],
      [
        1,
        () => ({
          value: this.world.ids(rng.pick(['study', 'tenant', 'user', 'template'] as IdKind[]))[0].id,
          foreign: false,
          otherUnit: false,
          mangled: false,
        }),
      ],
      [
        2,
        () => {
          const value = rng.pick([
            '1',
            'abc',
            "1' OR '1'='1",
            '../../etc/passwd',
            '..%2F..%2Fetc%2Fpasswd',
            '%2e%2e%2f',
            'null',
            '00000000-0000-0000-0000-000000000000',
            'ffffffff-ffff-ffff-ffff-ffffffffffff',
            'a'.repeat(600),
            '😀',
            '\u0000',
            '%',
            `${rng.uuid()} `,
            `{${rng.uuid()}}`,
            rng.uuid().replace(/-/g, ''),
          ]);
          return { value, foreign: false, otherUnit: false, mangled: true };
        },
      ],
      [
        1,
        () => ({
          value: rng.pick(['..', '.', '../..', '%00', '%zz', '%2F', '', '//']),
          foreign: false,
          otherUnit: false,
          mangled: true,
          raw: true,
        }),
      ],
    ])();
  }

  private queryString(op: Operation): string {
    const rng = this.rng;
    const parts: string[] = [];
    const enc = encodeLoose;
    for (const param of op.parameters.filter((p) => p.in === 'query')) {
      if (rng.chance(0.45)) continue;
      const name = param.name;
      const kind = KIND_BY_FIELD[name];
      const value = rng.weighted<() => string | string[]>([
        [
          3,
          () =>
            name === 'page'
              ? String(rng.pick([1, 2, 3, 999999]))
              : kind
                ? rng.pick(this.world.ids(kind)).id
                : rng.pick(['doe', 'CT', 'a']),
        ],
        [2, () => nastyString(rng)],
        [1, () => rng.pick(LIKE)],
        [1, () => rng.pick(SQL)],
        [1, () => rng.pick(['0', '-1', '1.5', '1e3', 'NaN', 'Infinity', '0x10', ' 1', '99999999999999999999', ''])],
        [1, () => [String(rng.int(3) + 1), rng.pick(['2', 'x'])]],
      ])();
      if (Array.isArray(value)) value.forEach((v) => parts.push(`${enc(name)}=${enc(v)}`));
      else parts.push(`${enc(name)}=${enc(value)}`);
    }
    if (rng.chance(0.15)) {
      parts.push(
        rng.pick([
          'per_page=100000',
          'search[$ne]=1',
          'page[]=1',
          '__proto__[admin]=1',
          'constructor[prototype][x]=1',
          '%zz=1',
          'search=%',
          'search=%ff%fe',
          'search=%00',
          `search=${'a'.repeat(5000)}`,
          `tenant_id=${this.world.ids('tenant')[1].id}`,
          'limit=-1&offset=-1',
          'sort=password',
        ]),
      );
    }
    return parts.join('&');
  }

  private specialHeaders(op: Operation, headers: Record<string, string>, facts: FuzzRequest['facts']): void {
    const rng = this.rng;
    if (op.path === '/api/viewer/token/validate') {
      const tokenClinic = rng.pick(['a', 'b'] as const);
      const other = tokenClinic === 'a' ? 'b' : 'a';
      const own = this.world.studyUid(tokenClinic);
      const theirs = this.world.studyUid(other);
      const tokenValue = rng.weighted<() => string | undefined>([
        [6, () => this.world.viewerToken(tokenClinic)],
        [1, () => undefined],
        [1, () => rng.uuid()],
        [1, () => nastyString(rng).replace(/[\r\n\u0000-\u001f\u007f-\uffff]/g, '?')],
        [0.5, () => `${this.world.viewerToken(tokenClinic)} `],
        [0.5, () => this.world.viewerToken(tokenClinic).toUpperCase()],
      ])();
      if (tokenValue !== undefined) headers['x-viewer-token'] = tokenValue;
      const uri = rng.weighted<() => string | undefined>([
        [3, () => `/dicom-web/studies/${own}`],
        [2, () => `/dicom-web/studies/${theirs}`],
        [1, () => `/dicom-web/studies/${own}/../${theirs}/series`],
        [1, () => `/dicom-web/studies/${own}/..%2F${theirs}`],
        [1, () => `/dicom-web/studies?StudyInstanceUIDs=${own},${theirs}`],
        [1, () => `/dicom-web/studies?0020000D=${own}%5C${theirs}`],
        [1, () => `/dicom-web/studies?0020000d=${own}\\${theirs}`],
        [1, () => `/dicom-web/studies?StudyInstanceUID=${theirs}&StudyInstanceUID=${own}`],
        [1, () => `/dicom-web/studies?studyinstanceuids=${own}&0020000D=${theirs}`],
        [1, () => `/dicom-web/studies?StudyInstanceUIDs=*`],
        [1, () => `/dicom-web/studies?StudyInstanceUIDs=${own.slice(0, 10)}*`],
        [1, () => `/dicom-web/studies?0020000D=`],
        [1, () => `/dicom-web/studies`],
        [1, () => `/dicom-web//studies/${theirs}`],
        [1, () => `/dicom-web/studies/${encodeURIComponent(own + ',' + theirs)}`],
        [1, () => `/dicom-web/studies/${own}%00/../${theirs}`],
        [1, () => `/dicom-web/studies?StudyInstanceUIDs=${Array.from({ length: 2000 }, () => own).join(',')},${theirs}`],
        [1, () => undefined],
        [1, () => nastyString(rng).replace(/[\r\n\u0000-\u001f\u007f-\uffff]/g, '')],
        [1, () => `/dicom-web/studies/${rng.pick(SQL)}`],
      ])();
      if (uri !== undefined) headers['x-original-uri'] = uri;
      facts.viewerCrossTenant = tokenValue === this.world.viewerToken(tokenClinic) && uri !== undefined && uri.includes(theirs);
    }
    // The image server's two routes (the webhook, the study's door) share its secret.
    if (op.path === '/api/imgsrv/webhook' || op.path === '/api/imgsrv/door') {
      const secret = rng.weighted<() => string | undefined>([
        [5, () => this.webhookSecret],
        [1, () => undefined],
        [1, () => ''],
        [1, () => this.webhookSecret.slice(0, -1)],
        [1, () => `${this.webhookSecret}x`],
        [1, () => this.webhookSecret.toUpperCase()],
        [1, () => ` ${this.webhookSecret}`],
        [1, () => nastyString(rng).replace(/[\r\n\u0000-\u001f\u007f-\uffff]/g, '')],
      ])();
      if (secret !== undefined) headers['x-webhook-secret'] = secret;
      facts.wrongWebhookSecret = secret !== this.webhookSecret && secret?.trim() !== this.webhookSecret;
    }
  }

  private body(
    op: Operation,
    home: 'a' | 'b' | null,
    facts: FuzzRequest['facts'],
  ): { payload: Buffer; headers: Record<string, string>; strategy: string; unsupported: boolean } | null {
    const rng = this.rng;
    const wantsBody = op.bodySchema !== null || op.method === 'POST' || op.method === 'PATCH';
    if (!wantsBody && !rng.chance(0.05)) return null;
    if (wantsBody && rng.chance(0.05)) return null;

    const json = (value: unknown, strategy: string) => ({
      payload: Buffer.from(JSON.stringify(value) ?? 'null'),
      headers: { 'content-type': 'application/json' } as Record<string, string>,
      strategy,
      unsupported: false,
    });
    const strategy = rng.weighted([
      [5, 'valid'],
      [6, 'mutated'],
      [1, 'wrong-root'],
      [2, 'malformed'],
      [1, 'content-type'],
      [op.path === '/api/imgsrv/webhook' ? 3 : 0, 'webhook'],
      [0.08, 'oversized'],
    ] as const);
    switch (strategy) {
      case 'valid':
        return json(this.fromSchema(op.bodySchema, '', home, facts), strategy);
      case 'mutated': {
        const value = this.fromSchema(op.bodySchema, '', home, facts);
        return json(this.mutate(value), strategy);
      }
      case 'wrong-root':
        return json(
          rng.pick<unknown>([[], [{}], 'string', 42, null, true, nestedArrays(rng.pick([100, 1000])), wrongValue(rng)]),
          strategy,
        );
      case 'malformed':
        return { payload: malformedJson(rng), headers: { 'content-type': 'application/json' }, strategy, unsupported: false };
      case 'content-type': {
        const type = rng.pick([
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/xml',
          'application/json; charset=latin1',
          'application/JSON',
          'application/vnd.api+json',
          'image/png',
          '',
        ]);
        const value = JSON.stringify(this.fromSchema(op.bodySchema, '', home, facts));
        const payload = Buffer.from(
          type === 'application/x-www-form-urlencoded'
            ? rng.pick([value, `${encodeURIComponent(value)}=`, 'a[b][c]=1&a=2'])
            : value,
        );
        // Forms are taken by the webhook only (another site's page can post one without asking): 415 here.
        const supported = ['text/plain', 'application/json; charset=latin1', 'application/JSON'];
        const headers: Record<string, string> = type ? { 'content-type': type } : {};
        return { payload, headers, strategy: `content-type ${type || '(none)'}`, unsupported: !supported.includes(type) };
      }
      case 'webhook': {
        const id = rng.pick<unknown>([
          `${rng.hex(8)}-${rng.hex(8)}-${rng.hex(8)}-${rng.hex(8)}-${rng.hex(8)}`,
          '',
          42,
          null,
          ['a'],
          { $ne: 1 },
          'x'.repeat(5000),
          rng.pick(SQL),
          '../../studies',
        ]);
        const shape = rng.pick(['json', 'text', 'form-key', 'form-pairs', 'no-id']);
        const doc = JSON.stringify(shape === 'no-id' ? { Path: '/studies/x' } : { ID: id, Path: `/studies/${String(id)}` });
        if (shape === 'json') return json(JSON.parse(doc), 'webhook json');
        if (shape === 'text')
          return {
            payload: Buffer.from(doc),
            headers: { 'content-type': 'text/plain' },
            strategy: 'webhook text',
            unsupported: false,
          };
        if (shape === 'form-key')
          return {
            payload: Buffer.from(doc),
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            strategy: 'webhook form',
            unsupported: false,
          };
        return {
          payload: Buffer.from(`ID=${encodeURIComponent(String(id))}&ID=2`),
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          strategy: 'webhook form pairs',
          unsupported: false,
        };
      }
      case 'oversized': {
        const payload = Buffer.alloc(BODY_LIMIT + 1 + rng.int(1024), 0x61);
        payload.write('{"name":"');
        payload.write('"}', payload.length - 2);
        return { payload, headers: { 'content-type': 'application/json' }, strategy, unsupported: false };
      }
    }
  }

  private resolve(schema: Schema | null): Schema | null {
    if (!schema) return null;
    if (schema.$ref) {
      const name = schema.$ref.split('/').pop()!;
      return this.resolve(this.document.components.schemas[name]);
    }
    if (schema.allOf?.length) return { ...this.resolve(schema.allOf[0]), nullable: schema.nullable };
    return schema;
  }

  /** A body that satisfies the schema, with ids from the caller's clinic (sometimes the other's). */
  private fromSchema(raw: Schema | null, field: string, home: 'a' | 'b' | null, facts: FuzzRequest['facts']): unknown {
    const rng = this.rng;
    const schema = this.resolve(raw);
    if (!schema) return {};
    if (schema.enum?.length) return rng.pick(schema.enum);
    const kind = KIND_BY_FIELD[field];
    if (schema.format === 'uuid' || kind) {
      const pool = this.world.ids(kind ?? 'study');
      const foreign = rng.chance(0.3);
      const candidates = pool.filter((r) => (foreign ? r.clinic !== (home ?? 'a') : r.clinic === (home ?? 'a')));
      const picked = rng.pick(candidates.length ? candidates : pool);
      if (field === 'study_id' && home && picked.clinic !== home) facts.foreignBodyStudy = true;
      return picked.id;
    }
    if (/logo|signature|data_url/.test(field)) return rng.chance(0.15) ? null : lyingDataUrl(rng);
    switch (schema.type) {
      case 'object': {
        const out: Record<string, unknown> = {};
        for (const [name, prop] of Object.entries(schema.properties ?? {})) {
          const required = schema.required?.includes(name);
          if (!required && rng.chance(0.35)) continue;
          out[name] = this.fromSchema(prop, name, home, facts);
        }
        return out;
      }
      case 'array':
        return [this.fromSchema(schema.items ?? { type: 'string' }, field, home, facts)];
      case 'boolean':
        return rng.chance(0.5);
      case 'number':
      case 'integer':
        return field === 'opacity' ? rng.pick([0, 0.5, 1]) : rng.int(3) + 1;
      default: {
        if (field === 'email')
          return rng.chance(0.5) ? rng.pick(this.world.fixtureEmails()) : `fuzz-${rng.hex(10)}@example.test`;
        if (field === 'password') return rng.chance(0.6) ? 'correct-horse-battery' : `pw-${rng.hex(8)}`;
        if (field === 'crm') return rng.pick(['123456/SP', '1234/RJ', null]);
        if (field === 'aet') return `FZ${rng.hex(6)}`.toUpperCase();
        if (field === 'ip_address') return rng.pick(['10.1.2.3', '::1', 'fe80::1']);
        if (field === 'slug') return `fuzz-${rng.hex(6)}`;
        if (field === 'name') return `Fuzz ${rng.hex(8)}`;
        return `fuzz ${rng.hex(4)}`;
      }
    }
  }

  private mutate(value: unknown): unknown {
    const rng = this.rng;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return wrongValue(rng);
    const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
    const keys = Object.keys(out);
    const times = 1 + rng.int(3);
    for (let i = 0; i < times; i++) {
      const op = rng.weighted([
        [5, 'replace'],
        [1, 'delete'],
        [1, 'extra'],
        [1, 'proto'],
      ] as const);
      const key = keys.length ? rng.pick(keys) : 'name';
      if (op === 'replace') out[key] = wrongValue(rng);
      if (op === 'delete') delete out[key];
      if (op === 'extra')
        out[rng.pick(['is_super_admin', 'id', 'tenant_id', 'password', 'deleted_at', 'per_page', 'x'])] = wrongValue(rng);
      if (op === 'proto') {
        return JSON.parse(
          `{"__proto__":{"is_super_admin":true,"isAdmin":true},${JSON.stringify(out).slice(1)}`.replace(/,}$/, '}'),
        );
      }
    }
    return out;
  }
}
