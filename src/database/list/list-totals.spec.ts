import { ListTotals } from './list-totals';
import { SqlParams } from './sql-params';

/** A count that answers with the next of `answers`, after `gate`, and records that it ran. */
function counter(answers: Array<{ total: number; version: string }>, gate: Promise<void> = Promise.resolve()) {
  const count = Object.assign(
    async () => {
      count.calls += 1;
      await gate;
      const next = answers.shift();
      if (!next) throw new Error('unexpected count');
      return next;
    },
    { calls: 0 },
  );
  return count;
}

/** The total of a kept count. */
const totalOf = async (kept: Promise<{ total: number }>) => (await kept).total;

describe('ListTotals.cached', () => {
  it('counts once per key and version, and again when the version moves', async () => {
    const totals = new ListTotals();
    expect(await totalOf(totals.cached('k', '7.3', counter([{ total: 42, version: '7.3' }])))).toBe(42);
    const again = counter([]);
    expect(await totalOf(totals.cached('k', '7.3', again))).toBe(42);
    expect(again.calls).toBe(0);
    const moved = counter([{ total: 43, version: '9.3' }]);
    expect(await totalOf(totals.cached('k', '9.3', moved))).toBe(43);
    expect(moved.calls).toBe(1);
    expect(await totalOf(totals.cached('other', '9.3', counter([{ total: 1, version: '9.3' }])))).toBe(1);
  });

  it('keeps a count under the version read with it, not the one the caller saw before', async () => {
    const totals = new ListTotals();
    // The caller read 5.1, a write committed, the count saw 6.1: it is exact for 6.1 only.
    expect(await totalOf(totals.cached('k', '5.1', counter([{ total: 10, version: '6.1' }])))).toBe(10);
    expect(await totalOf(totals.cached('k', '5.1', counter([{ total: 9, version: '5.1' }])))).toBe(9);
    const at6 = counter([]);
    expect(await totalOf(totals.cached('k', '6.1', at6))).toBe(10);
    expect(at6.calls).toBe(0);
  });

  it('shares one count between concurrent misses of the same key and version only', async () => {
    const totals = new ListTotals();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const shared = counter([{ total: 5, version: '1.1' }], gate);
    const second = counter([{ total: 99, version: '1.1' }]);
    const otherVersion = counter([{ total: 6, version: '2.1' }]);
    const pending = [
      totals.cached('k', '1.1', shared),
      totals.cached('k', '1.1', second),
      totals.cached('k', '2.1', otherVersion),
    ];
    open();
    expect((await Promise.all(pending)).map((kept) => kept.total)).toEqual([5, 5, 6]);
    expect(second.calls).toBe(0);
  });

  it('keeps at most 10,000 totals, dropping the oldest first', async () => {
    const totals = new ListTotals();
    for (let i = 0; i <= 10_000; i++) {
      await totals.cached(`k${i}`, '1.1', counter([{ total: i, version: '1.1' }]));
    }
    const newest = counter([]);
    expect(await totalOf(totals.cached('k10000', '1.1', newest))).toBe(10_000);
    expect(newest.calls).toBe(0);
    const oldest = counter([{ total: 0, version: '1.1' }]);
    expect(await totalOf(totals.cached('k0', '1.1', oldest))).toBe(0);
    expect(oldest.calls).toBe(1);
  });

  it('does not keep a failed count', async () => {
    const totals = new ListTotals();
    await expect(totals.cached('k', '1.1', () => Promise.reject(new Error('connection lost')))).rejects.toThrow(
      'connection lost',
    );
    expect(await totalOf(totals.cached('k', '1.1', counter([{ total: 3, version: '1.1' }])))).toBe(3);
  });
});

describe('ListTotals SQL', () => {
  it('binds the scope of each counter expression as positional parameters', () => {
    const totals = new ListTotals();
    const p = new SqlParams();
    const studies = totals.studies({ kind: 'unit', tenantId: 't', unitId: 'u' }, p);
    expect(studies.total).toBe(
      '(SELECT coalesce(sum(c.studies), 0) FROM study_counts c WHERE c.tenant_id = $1 AND c.unit_id = $2)',
    );
    expect(studies.version).toContain('::text');
    expect(p.values).toEqual(['t', 'u', 't', 'u']);
    expect(studies.walked).toBe(
      '(SELECT coalesce(sum(c.studies), 0) FROM study_counts c WHERE c.tenant_id = $5 AND c.unit_id = $6)',
    );
    expect(p.values).toEqual(['t', 'u', 't', 'u', 't', 'u']);
    expect(totals.patients({ kind: 'unit', tenantId: 't', unitId: 'u' }, p).walked).toBe(
      '(SELECT coalesce(sum(c.patients), 0) FROM patient_counts c WHERE c.tenant_id = $7)',
    );

    const q = new SqlParams();
    const patients = totals.patients({ kind: 'unit', tenantId: 't', unitId: 'u' }, q);
    expect(patients.total).toBeNull();
    const version = patients.version;
    expect(version).toContain('patient_counts');
    expect(version).toContain('study_counts');
    // Read once, bound once: no parameter the statement would not use.
    expect(q.values).toEqual(['t', 't', 'u']);

    const r = new SqlParams();
    expect(totals.patients({ kind: 'none' }, r).total).toBe(
      '(SELECT coalesce(sum(c.patients), 0) FROM patient_counts c WHERE FALSE)',
    );
    expect(totals.studies({ kind: 'all' }, r).total).toBe(
      '(SELECT coalesce(sum(c.studies), 0) FROM study_counts c WHERE TRUE)',
    );
    expect(r.values).toEqual([]);
  });
});

describe('SqlParams', () => {
  it('numbers values in order and binds named fragments without touching casts', () => {
    const p = new SqlParams();
    expect(p.add(1)).toBe('$1');
    expect(p.bind({ sql: 'a = :x AND b::text = :y AND c = :x', params: { x: 'X', y: 'Y' } })).toBe(
      'a = $2 AND b::text = $3 AND c = $4',
    );
    expect(p.values).toEqual([1, 'X', 'Y', 'X']);
  });

  it('refuses a fragment with a parameter it was not given', () => {
    expect(() => new SqlParams().bind({ sql: 'a = :missing', params: {} })).toThrow('Unbound SQL parameter :missing');
  });
});
