/**
 * GET /api/series/{id}/instances is built as JSON text by PostgreSQL. It must be exactly what the
 * explicit mapping (toInstanceDto) makes of the same rows once parsed: field names and order,
 * numbers, nulls, and times as toISOString() writes them (microseconds cut to milliseconds, UTC, "Z").
 */
import { Instance } from '../../src/database/entities';
import { toInstanceDto } from '../../src/studies/dto/study.responses';
import { createTestApp, TestApp } from '../support/app';
import { createImagedStudy, createInstance, createSeries } from '../support/clinical-factories';
import { createClinic } from '../support/factories';

describe('instances list JSON', () => {
  let t: TestApp;
  let clinic: Awaited<ReturnType<typeof createClinic>>;

  beforeAll(async () => {
    t = await createTestApp();
    clinic = await createClinic(t.db, t.http);
  });
  afterAll(() => t.close());

  it('equals toInstanceDto of the same rows, in list order, as application/json', async () => {
    const { series } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
    await createInstance(t.db, series.id, {
      instance_number: 3,
      slice_thickness: 0.1,
      created_at: '2024-05-06T07:08:09.123456Z',
    });
    await createInstance(t.db, series.id, { instance_number: 2, rows: null, columns: null, slice_thickness: null });
    await createInstance(t.db, series.id, {
      instance_number: 2,
      slice_thickness: 2.5e-7,
      created_at: '1999-12-31T23:59:59.999999+03:00',
    });
    await t.db.query(
      `UPDATE instances SET updated_at = '2030-01-02T03:04:05.000001Z' WHERE series_id = $1 AND instance_number = 3`,
      [series.id],
    );

    const res = await t.http.get(`/api/series/${series.id}/instances`, { token: clinic.adminToken });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const entities = await t.db
      .getRepository(Instance)
      .createQueryBuilder('i')
      .where('i.series_id = :id', { id: series.id })
      .orderBy('i.instance_number', 'ASC')
      .addOrderBy('i.created_at', 'ASC')
      .addOrderBy('i.id', 'ASC')
      .getMany();
    expect(entities).toHaveLength(4);
    const expected = entities.map(toInstanceDto);
    const body = JSON.parse(res.raw.toString());
    expect(body).toEqual(expected);
    body.forEach((row: object, n: number) => expect(Object.keys(row)).toEqual(Object.keys(expected[n])));
    // Compact: no more bytes than JSON.stringify (PostgreSQL may write 2.5e-07 for 2.5e-7).
    expect(res.raw.length).toBeLessThanOrEqual(JSON.stringify(expected).length + 1);
  });

  it('streams a long series in parts that join into one valid array', async () => {
    const { series } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
    await t.db.query(
      `INSERT INTO instances (series_id, imgsrv_instance_id, sop_instance_uid, instance_number, rows, columns, slice_thickness)
       SELECT $1::uuid, 'long-' || $1::text || '-' || n, '1.2.3.' || n, 451 - n, 256, 256, n / 10.0 FROM generate_series(1, 450) AS n`,
      [series.id],
    );
    const res = await t.http.get(`/api/series/${series.id}/instances`, { token: clinic.adminToken });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const entities = await t.db
      .getRepository(Instance)
      .createQueryBuilder('i')
      .where('i.series_id = :id', { id: series.id })
      .orderBy('i.instance_number', 'ASC')
      .addOrderBy('i.created_at', 'ASC')
      .addOrderBy('i.id', 'ASC')
      .getMany();
    expect(entities).toHaveLength(451);
    expect(JSON.parse(res.raw.toString())).toEqual(entities.map(toInstanceDto));
  });

  it("is [] for a series without instances, and 404 outside the caller's unit or tenant", async () => {
    const { study } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit2.id);
    const empty = await createSeries(t.db, study.id, { series_number: 9 });
    const own = await t.http.get(`/api/series/${empty.id}/instances`, { token: clinic.token2 });
    expect(own.status).toBe(200);
    expect(own.body).toEqual([]);
    const otherUnit = await t.http.get(`/api/series/${empty.id}/instances`, { token: clinic.token1 });
    expect(otherUnit.status).toBe(404);
    expect(otherUnit.body).toEqual({ message: 'Series not found.' });
    const other = await createClinic(t.db, t.http);
    const otherTenant = await t.http.get(`/api/series/${empty.id}/instances`, { token: other.adminToken });
    expect(otherTenant.status).toBe(404);
    expect(otherTenant.body).toEqual({ message: 'Series not found.' });
  });
});
