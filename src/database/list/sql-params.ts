/**
 * Positional parameters ($1, $2, ...) for the hand-written list SQL, where one statement per request
 * (page and total together) and no query-builder work matter.
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
