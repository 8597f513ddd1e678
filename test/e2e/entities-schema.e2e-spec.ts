/**
 * The entities describe the tables the migrations make. The data source finds them by name (every
 * *.entity file under src/: the shared ones and each feature's own), so one that is not found, or a
 * column declared without its migration, fails here rather than in the first request that reads it.
 */
import { createTestApp, TestApp } from '../support/app';

interface DatabaseColumn {
  table_name: string;
  column_name: string;
  data_type: string;
  udt_name: string;
  is_nullable: 'YES' | 'NO';
}

describe('entities and the migrated schema', () => {
  let t: TestApp;
  let columns: Map<string, DatabaseColumn>;

  beforeAll(async () => {
    t = await createTestApp();
    const rows = (await t.db.query(
      `SELECT table_name, column_name, data_type, udt_name, is_nullable
         FROM information_schema.columns WHERE table_schema = current_schema()`,
    )) as DatabaseColumn[];
    columns = new Map(rows.map((row) => [`${row.table_name}.${row.column_name}`, row]));
  });

  afterAll(async () => {
    await t.close();
  });

  it("maps the shared entities and each feature's own", () => {
    expect(t.db.entityMetadatas.map((entity) => entity.tableName).sort()).toEqual([
      'instances',
      'modalities',
      'patients',
      'report_pdfs',
      'report_presets',
      'report_templates',
      'reports',
      'series',
      'shares',
      'studies',
      'tenants',
      'thumbnails',
      'units',
      'users',
    ]);
  });

  it('finds every column of every entity in its table, with its type and whether it may be null', () => {
    const declared = t.db.entityMetadatas.flatMap((entity) =>
      entity.columns.map((column) => {
        const type = t.db.driver.normalizeType(column);
        return {
          column: `${entity.tableName}.${column.databaseName}`,
          type: column.isArray ? `${type}[]` : type,
          nullable: column.isNullable,
        };
      }),
    );
    const found = declared.map(({ column }) => {
      const actual = columns.get(column);
      if (!actual) return { column, type: 'missing', nullable: false };
      const type = actual.data_type === 'ARRAY' ? `${arrayElementType(actual.udt_name)}[]` : actual.data_type;
      return { column, type, nullable: actual.is_nullable === 'YES' };
    });
    expect(found).toEqual(declared);
  });
});

/** information_schema names an array's element type by its internal name (`_text`, `_varchar`). */
function arrayElementType(udtName: string): string {
  const element = udtName.replace(/^_/, '');
  return { varchar: 'character varying', int4: 'integer', int8: 'bigint', bool: 'boolean' }[element] ?? element;
}
