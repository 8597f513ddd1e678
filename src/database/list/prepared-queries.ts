import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHash } from 'crypto';
import { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

// Statement texts are built from a bounded set of shapes (list, scope kind, filters, plan) with
// every value a parameter; past this many, something interpolates values, and texts run unnamed.
const MAX_NAMED = 500;

/**
 * Statements run on every request (the lists', a share's open) as named prepared statements of their
 * connection (pg's `name`): PostgreSQL parses and analyses each distinct text once per connection
 * instead of on every request, and the pool is used without a TypeORM query runner per call. Each
 * execution is still planned for its values: the connections set `plan_cache_mode =
 * force_custom_plan` (data-source-options.ts), because a page's LIMIT and a fragment's pattern
 * decide its plan. One instance per process (ListModule), so a text has one name.
 */
@Injectable()
export class PreparedQueries {
  private readonly names = new Map<string, string>();

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async query<T>(text: string, values: unknown[]): Promise<T[]> {
    const pool = (this.db.driver as PostgresDriver).master as Pool;
    return (await pool.query({ name: this.nameOf(text), text, values })).rows as T[];
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
