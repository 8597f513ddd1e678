import { DataSource, SelectQueryBuilder } from 'typeorm';
import { DataScope } from '../common/auth/data-scope';
import { AccessTrailRepository } from './access-trail.repository';
import { AccessTrailService } from './access-trail.service';
import { AccessTrailQueryDto } from './dto/access-trail.dto';

const CLINIC = '33333333-3333-4333-8333-333333333333';
const OTHER = '44444444-4444-4444-8444-444444444444';

/** The statements the service has the repository run, on a DataSource that never connects. */
function build() {
  const statements: Array<[string, unknown[]]> = [];
  const capture = function (this: SelectQueryBuilder<object>, answer: unknown) {
    statements.push(this.getQueryAndParameters());
    return Promise.resolve(answer);
  };
  jest.spyOn(SelectQueryBuilder.prototype, 'getRawMany').mockImplementation(function (this: SelectQueryBuilder<object>) {
    return capture.call(this, []) as never;
  });
  jest.spyOn(SelectQueryBuilder.prototype, 'getRawOne').mockImplementation(function (this: SelectQueryBuilder<object>) {
    return capture.call(this, { count: 0 }) as never;
  });
  const service = new AccessTrailService(new AccessTrailRepository(new DataSource({ type: 'postgres' })));
  return { service, statements };
}

const query = (values: Partial<AccessTrailQueryDto>) => ({ page: 1, ...values }) as AccessTrailQueryDto;
const whereOf = ([sql]: [string, unknown[]]) => sql.slice(sql.indexOf(' WHERE '));

describe('AccessTrailService', () => {
  afterEach(() => jest.restoreAllMocks());

  describe('whose entries', () => {
    it('reads nothing for scope none, whatever tenant_id says (fails closed)', async () => {
      const { service, statements } = build();
      const none: DataScope = { kind: 'none' };
      expect(await service.page(none, query({ tenant_id: OTHER }))).toMatchObject({ data: [], total: 0 });
      expect(statements.length).toBeGreaterThan(0);
      for (const statement of statements) {
        expect(whereOf(statement)).toMatch(/^ WHERE FALSE( |$)/);
        expect(statement[1]).not.toContain(OTHER);
      }
    });

    it("reads a tenant admin's clinic whatever tenant_id says, and lets a super admin choose", async () => {
      const { service, statements } = build();
      await service.page({ kind: 'tenant', tenantId: CLINIC }, query({ tenant_id: OTHER }));
      for (const statement of statements.splice(0)) {
        expect(whereOf(statement)).toContain('a.tenant_id = $1');
        expect(statement[1]).toEqual([CLINIC]);
      }
      await service.page({ kind: 'all' }, query({ tenant_id: OTHER }));
      for (const statement of statements.splice(0)) {
        expect(whereOf(statement)).toMatch(/^ WHERE TRUE AND a.tenant_id = \$1/);
        expect(statement[1]).toEqual([OTHER]);
      }
      await service.page({ kind: 'all' }, query({}));
      for (const statement of statements.splice(0)) expect(statement[1]).toEqual([]);
    });
  });

  describe('from and to (inclusive)', () => {
    const bounds = async (values: Partial<AccessTrailQueryDto>) => {
      const { service, statements } = build();
      await service.page({ kind: 'all' }, query(values));
      const [sql, parameters] = statements[0];
      return { where: whereOf([sql, parameters]), parameters };
    };

    it('reads a date-only `to` through the end of that day: before the next one', async () => {
      expect(await bounds({ to: '2026-11-30' })).toEqual({
        where: expect.stringContaining('a.occurred_at < $1'),
        parameters: ['2026-12-01T00:00:00.000Z'],
      });
      expect((await bounds({ to: '2026-12-31' })).parameters).toEqual(['2027-01-01T00:00:00.000Z']);
      expect((await bounds({ to: '2028-02-28' })).parameters).toEqual(['2028-02-29T00:00:00.000Z']);
    });

    it('reads a `to` of a month or a year through its end', async () => {
      expect((await bounds({ to: '2026-11' })).parameters).toEqual(['2026-12-01T00:00:00.000Z']);
      expect((await bounds({ to: '2026' })).parameters).toEqual(['2027-01-01T00:00:00.000Z']);
      expect((await bounds({ to: '9999-12-31' })).parameters).toEqual(['10000-01-01T00:00:00.000Z']);
    });

    it('keeps the exact instant of a date-time `to`', async () => {
      expect(await bounds({ to: '2026-11-30T10:15:00+01:00' })).toEqual({
        where: expect.stringContaining('a.occurred_at <= $1'),
        parameters: ['2026-11-30T09:15:00.000Z'],
      });
    });

    it('reads a date-only `from` from the start of that day', async () => {
      expect(await bounds({ from: '2026-11-30', to: '2026-11-30' })).toEqual({
        where: expect.stringContaining('a.occurred_at >= $1 AND a.occurred_at < $2'),
        parameters: ['2026-11-30T00:00:00.000Z', '2026-12-01T00:00:00.000Z'],
      });
    });
  });
});
