import { Module } from '@nestjs/common';
import { ListTotals } from './list-totals';
import { PreparedQueries } from './prepared-queries';

/** The shared list machinery: kept totals and the prepared statements of the list hot paths. */
@Module({
  providers: [ListTotals, PreparedQueries],
  exports: [ListTotals, PreparedQueries],
})
export class ListModule {}
