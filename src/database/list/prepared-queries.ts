import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHash } from 'crypto';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

// Statement texts are built from a bounded set of shapes (scope, filters, plan) with every value
// a parameter; past this many, something interpolates values, and texts run unnamed instead of
// filling every connection with prepared statements.
const MAX_NAMED = 500;

/**
 * The list pages' statements as named prepared statements of their connection (pg's `name`):
 * PostgreSQL parses and analyses each distinct text once per connection, where an unnamed
 * statement is parsed again on every request. On the studies search, parsing was 0.2 ms of a
 * 1 ms statement. Each execution is still planned for its own values (custom plans: the scope and
 * the search pattern decide the plan). One instance per process (ListModule), so that a statement's
 * name is the same for every repository that runs its text.
 */
@Injectable()
export class PreparedQueries {
  private readonly names = new Map<string, string>();

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async query<T>(text: string, values: unknown[]): Promise<T[]> {
    const pool = (this.db.driver as PostgresDriver).master as Pool;
    const result = await pool.query({ name: this.nameOf(text), text, values });
    return result.rows as T[];
  }

  private nameOf(text: string): string | undefined {
    let name = this.names.get(text);
    if (name === undefined && this.names.size < MAX_NAMED) {
      name = `q_${createHash('sha1').update(text).digest('hex').slice(0, 32)}`;
      this.names.set(text, name);
    }
    return name;
  }
}
