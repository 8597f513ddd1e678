import { Injectable } from '@nestjs/common';
import { Readable } from 'stream';
import { DataScope } from '../common/auth/data-scope';
import { Errors } from '../common/errors/api-errors';
import { fetchPage } from '../common/pagination';
import { AccessTrailFilter, AccessTrailRepository, AccessTrailRow } from './access-trail.repository';
import { AccessTrailEntryDto, AccessTrailPageDto, AccessTrailQueryDto } from './dto/access-trail.dto';

export const ACCESS_TRAIL_PER_PAGE = 50;
/** Rows per statement while the CSV export streams the whole filtered set. */
const CSV_BATCH = 1_000;
const CSV_COLUMNS = [
  'id',
  'at',
  'action',
  'user_id',
  'user_name',
  'share_id',
  'tenant_id',
  'study_id',
  'patient_id',
  'ip',
  'count',
];

/**
 * Reading the access trail (decisions.md 3e): a tenant admin their clinic's entries, a super admin
 * every clinic's (`tenant_id` to filter). Entries are never changed or deleted through the API.
 */
@Injectable()
export class AccessTrailService {
  constructor(private readonly trail: AccessTrailRepository) {}

  async page(scope: DataScope, query: AccessTrailQueryDto): Promise<AccessTrailPageDto> {
    const filter = filterOf(scope, query);
    const page = await fetchPage(
      query.page,
      ACCESS_TRAIL_PER_PAGE,
      (offset, limit) => Promise.all([this.trail.page(filter, offset, limit), this.trail.count(filter)]),
      entryOf,
    );
    return { ...page, total_exact: true };
  }

  /** The whole filtered set as CSV, newest first, read in batches while it is sent. */
  csv(scope: DataScope, query: AccessTrailQueryDto): Readable {
    const filter = filterOf(scope, query);
    const trail = this.trail;
    async function* lines(): AsyncGenerator<string> {
      yield `${CSV_COLUMNS.join(',')}\r\n`;
      let cursor = null;
      for (;;) {
        const rows = await trail.after(filter, cursor, CSV_BATCH);
        if (rows.length === 0) return;
        yield rows.map(csvLine).join('');
        const last = rows[rows.length - 1];
        cursor = { occurredAt: last.occurred_at, id: last.id };
        if (rows.length < CSV_BATCH) return;
      }
    }
    return Readable.from(lines());
  }
}

function filterOf(scope: DataScope, query: AccessTrailQueryDto): AccessTrailFilter {
  return {
    // What the scope sees (data-scope.ts: nothing for scope none); only a super admin narrows it by
    // tenant_id, a tenant admin reads their clinic whatever tenant_id says.
    scope,
    tenantId: scope.kind === 'all' ? query.tenant_id : undefined,
    patientId: query.patient_id,
    studyId: query.study_id,
    userId: query.user_id,
    action: query.action,
    from: query.from === undefined ? undefined : instantOf('from', query.from),
    ...untilOf(query.to),
  };
}

/** A date without a time, of a day, a month or a year: `2026-11-30`, `2026-11`, `2026`. */
const DATE_ONLY = /^[+-]?(?:\d{4}|\d{6})(?:-(?<month>\d\d)(?:-(?<day>\d\d))?)?$/;

/**
 * `to` is inclusive: a date-time is read up to that exact instant, a date without a time up to the
 * end of that whole day (month, year), i.e. before the start of the next one. Dates are UTC days,
 * like `from`'s (the start of its day) and the entries' `at`.
 */
function untilOf(to: string | undefined): Pick<AccessTrailFilter, 'to' | 'before'> {
  if (to === undefined) return {};
  const instant = instantOf('to', to);
  const date = DATE_ONLY.exec(to)?.groups;
  if (!date) return { to: instant };
  const end = new Date(instant);
  if (date.month === undefined) end.setUTCFullYear(end.getUTCFullYear() + 1);
  else if (date.day === undefined) end.setUTCMonth(end.getUTCMonth() + 1);
  else end.setUTCDate(end.getUTCDate() + 1);
  // The end of 9999 is written +010000-01-01 by toISOString, a form PostgreSQL does not read.
  return { before: end.toISOString().replace(/^\+0*/, '') };
}

/** A date-time that ends in its time, with no `Z` or offset. */
const LOCAL_TIME = /T[0-9:.,]+$/i;

/**
 * An ISO 8601 text the database reads as the same instant. class-validator accepts forms (week and
 * ordinal dates, six-digit years) that PostgreSQL does not: those are a 422 too, not a failed query.
 */
function instantOf(field: 'from' | 'to', text: string): string {
  // A date-time without an offset is UTC, as the entries' `at` and the dates are, not the host's zone.
  const time = new Date(LOCAL_TIME.test(text) ? `${text}Z` : text);
  const year = time.getUTCFullYear();
  if (Number.isNaN(time.getTime()) || year < 1 || year > 9999) {
    throw Errors.fieldInvalid(field, `The ${field} field must be an ISO 8601 date or date-time.`);
  }
  return time.toISOString();
}

function entryOf(row: AccessTrailRow): AccessTrailEntryDto {
  return {
    id: row.id,
    at: row.occurred_at.toISOString(),
    action: row.action,
    user: row.user_id ? { id: row.user_id, name: row.user_name ?? '' } : null,
    share_id: row.share_id,
    tenant_id: row.tenant_id,
    study_id: row.study_id,
    patient_id: row.patient_id,
    ip: row.ip,
    count: row.result_count,
  };
}

function csvLine(row: AccessTrailRow): string {
  const entry = entryOf(row);
  const cells = [
    entry.id,
    entry.at,
    entry.action,
    entry.user?.id,
    entry.user?.name,
    entry.share_id,
    entry.tenant_id,
    entry.study_id,
    entry.patient_id,
    entry.ip,
    entry.count,
  ];
  return `${cells.map(csvCell).join(',')}\r\n`;
}

/**
 * RFC 4180 quoting; a text that a spreadsheet would run as a formula (a user's name or a Patient ID
 * starting with `=`, `+`, `-`, `@`) is written with a leading `'`.
 */
function csvCell(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
