/**
 * Positional parameters ($1, $2, ...) for hand-written SQL on the list hot paths, where one statement
 * per request (page and total together) and no query-builder work matter (bench/README.md).
 */
export class SqlParams {
  readonly values: unknown[] = [];

  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }

  /** A fragment with TypeORM-style `:name` parameters (scopeCondition's), bound as positional ones. */
  bind(fragment: { sql: string; params: Record<string, unknown> }): string {
    return fragment.sql.replace(/(?<!:):(\w+)/g, (_match, name: string) => {
      if (!(name in fragment.params)) throw new Error(`Unbound SQL parameter :${name}`);
      return this.add(fragment.params[name]);
    });
  }
}
