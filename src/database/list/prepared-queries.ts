import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHash } from 'crypto';
import { availableParallelism } from 'os';
import { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { OrderedGate } from '../../common/concurrency/ordered-gate';

// Statement texts are built from a bounded set of shapes (scope, filters, plan) with every value
// a parameter; past this many, something interpolates values, and texts run unnamed instead of
// filling every connection with prepared statements.
const MAX_NAMED = 500;

// Connections of the generic-plan pool: two per core. Its statements are short and mostly CPU (the
// blocks they read are in memory), so more of them at once than the cores can run only take turns
// on the cores, with the API's event loop among them; the others wait for a connection in request
// order (OrderedGate). On two cores, against 10 connections waiting in pg-pool's arrival order, the
// typed stream's p99 was lower in 21 of 28 alternating rounds at the same requests/s, and PostgreSQL
// spent 12-23% less CPU per search (bench/README.md, "Sixteenth round").
export const GENERIC_CONNECTIONS = Math.max(2, 2 * availableParallelism());

/**
 * How a statement's executions are planned:
 * - `custom` (the default): for each execution's values. A statement with a LIMIT or OFFSET
 *   parameter needs them: planned without its values, PostgreSQL assumes a tenth of the rows are
 *   wanted, and a list page read the whole unit by bitmap and sorted it (a unit's page 1: 54-250 ms
 *   against 0.3; the soak fell from 447 to 161 requests/s, bench/README.md "Seventh round").
 * - `generic`: planned once per connection, for any values. Only for a statement whose every plan
 *   choice is in its text and which has no LIMIT or OFFSET to plan for, has them in its text, or
 *   has one plan for any of theirs: a search's counts (ListSearch: a first search's sizes and count,
 *   a recount), a kept page read by its ids, a shallow page of collected matches (plannedOnce), a
 *   walk's page (the order index read in order up to the cap: ListSearch's walkPlannedOnce).
 *   Planning those for their values cost more than running them (a count's bind 0.6-1.0 ms for
 *   0.1-1.8 ms of execution, a collected page's 0.66-0.75 ms for 0.1-0.3 ms, a walk's 0.37-0.46 ms
 *   for 0.66-0.84 ms).
 */
export type PlanMode = 'generic' | 'custom';

/**
 * The list pages' statements as named prepared statements of their connection (pg's `name`):
 * PostgreSQL parses and analyses each distinct text once per connection, where an unnamed
 * statement is parsed again on every request (on the studies search, parsing was 0.2 ms of a
 * 1 ms statement). `generic` statements run on a pool of their own whose connections set
 * `plan_cache_mode = force_generic_plan` (see PlanMode); `custom` ones on TypeORM's pool. One
 * instance per process (ListModule), so that a statement's name is the same for every repository
 * that runs its text.
 */
@Injectable()
export class PreparedQueries implements OnModuleDestroy {
  private readonly names = new Map<string, string>();
  private generic?: { pool: Pool; turns: OrderedGate };
  private readonly logger = new Logger(PreparedQueries.name);

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Runs `text` with `values`. A `generic` statement waits for its turn at the generic pool ordered
   * by `since` (OrderedGate): when the work it belongs to began, so that a request's later
   * statements go before the first statements of requests that came after it.
   */
  async query<T>(text: string, values: unknown[], plans: PlanMode = 'custom', since?: number): Promise<T[]> {
    const config = { name: this.nameOf(text), text, values };
    if (plans === 'custom') return (await this.master().query(config)).rows as T[];
    const { pool, turns } = this.genericPool();
    return (await turns.run(() => pool.query(config), since)).rows as T[];
  }

  async onModuleDestroy(): Promise<void> {
    const generic = this.generic;
    this.generic = undefined;
    await generic?.pool.end();
  }

  private master(): Pool {
    return (this.db.driver as PostgresDriver).master as Pool;
  }

  /**
   * The pool on TypeORM's connection settings (URL, timeouts, startup options), generic plans
   * added, and the turns its statements wait for.
   */
  private genericPool(): { pool: Pool; turns: OrderedGate } {
    if (this.generic) return this.generic;
    const settings = this.master().options as Pool['options'] & { options?: string };
    const pool = new Pool({
      ...settings,
      max: GENERIC_CONNECTIONS,
      options: [settings.options, '-c plan_cache_mode=force_generic_plan'].filter(Boolean).join(' '),
    });
    // An idle connection's error (the server restarted) is the pool's to recover from, not the process's end.
    pool.on('error', (error) => this.logger.warn(`generic-plan pool: ${error.message}`));
    // The statements wait here, never in the pool, for as long as the pool would have let them and
    // with its message (a 503 to retry, isDependencyDown).
    const turns = new OrderedGate(
      GENERIC_CONNECTIONS,
      settings.connectionTimeoutMillis ?? 0,
      'timeout exceeded when trying to connect',
    );
    this.generic = { pool, turns };
    return this.generic;
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
